/* Name tables generated from the X-macro lists of usbyte/types.h. */
#include <string.h>

#include "usbyte/types.h"

static const char *const dtype_names[] = {
#define X(e, name, size, nccl) name,
    UB_DTYPE_LIST(X)
#undef X
};

static const size_t dtype_sizes[] = {
#define X(e, name, size, nccl) size,
    UB_DTYPE_LIST(X)
#undef X
};

static const char *const op_names[] = {
#define X(e, name, nccl) name,
    UB_OP_LIST(X)
#undef X
};

const char *ub_dtype_name(ub_dtype d) { return (unsigned)d < UB_DTYPE_COUNT ? dtype_names[d] : "?"; }
size_t ub_dtype_size(ub_dtype d) { return (unsigned)d < UB_DTYPE_COUNT ? dtype_sizes[d] : 0; }
const char *ub_op_name(ub_op o) { return (unsigned)o < UB_OP_COUNT ? op_names[o] : "?"; }

static int lookup(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int ub_dtype_parse(const char *name) { return lookup(dtype_names, UB_DTYPE_COUNT, name); }
int ub_op_parse(const char *name) { return lookup(op_names, UB_OP_COUNT, name); }
