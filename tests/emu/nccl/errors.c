/* Error reporting in the NCCL manner: a result code plus a message for ncclGetLastError,
 * printed as "NCCL WARN ..." only when NCCL_DEBUG asks for warnings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dtype.h"
#include "nccl_emu.h"

static _Thread_local char last_error[512];

ncclResult_t emu_error(ncclResult_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    const char *debug = getenv("NCCL_DEBUG");
    if (debug != NULL && (strcasecmp(debug, "WARN") == 0 || strcasecmp(debug, "INFO") == 0 ||
                          strcasecmp(debug, "TRACE") == 0))
        fprintf(stderr, "NCCL WARN %s\n", last_error);
    return code;
}

void emu_fmt(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

const char *emu_last_error(void)
{
    return last_error;
}

const char *emu_kind_name(enum emu_kind kind)
{
    switch (kind) {
    case EMU_ALLREDUCE: return "allreduce";
    case EMU_BROADCAST: return "broadcast";
    case EMU_REDUCE: return "reduce";
    case EMU_ALLGATHER: return "allgather";
    case EMU_REDUCESCATTER: return "reducescatter";
    case EMU_SEND: return "send";
    case EMU_RECV: return "recv";
    }
    return "?";
}

const char *emu_kind_api_name(enum emu_kind kind)
{
    switch (kind) {
    case EMU_ALLREDUCE: return "ncclAllReduce";
    case EMU_BROADCAST: return "ncclBroadcast";
    case EMU_REDUCE: return "ncclReduce";
    case EMU_ALLGATHER: return "ncclAllGather";
    case EMU_REDUCESCATTER: return "ncclReduceScatter";
    case EMU_SEND: return "ncclSend";
    case EMU_RECV: return "ncclRecv";
    }
    return "?";
}

void emu_format_sig(char *buf, size_t size, enum emu_kind kind, uint64_t count, int dtype, int op, int root)
{
    const char *dn = emu_dtype_name(dtype);
    char dbuf[24];
    if (dn == NULL) {
        snprintf(dbuf, sizeof dbuf, "dtype%d", dtype);
        dn = dbuf;
    }
    int n = snprintf(buf, size, "%s count=%llu %s", emu_kind_name(kind), (unsigned long long)count, dn);
    if (n < 0 || (size_t)n >= size)
        return;
    if (kind == EMU_ALLREDUCE || kind == EMU_REDUCE || kind == EMU_REDUCESCATTER) {
        const char *on = emu_op_name(op);
        n += on ? snprintf(buf + n, size - n, " %s", on) : snprintf(buf + n, size - n, " premulsum#%d", op - ncclNumOps);
    }
    if (n >= 0 && (size_t)n < size) {
        if (kind == EMU_BROADCAST || kind == EMU_REDUCE)
            snprintf(buf + n, size - n, " root=%d", root);
        else if (kind == EMU_SEND || kind == EMU_RECV)
            snprintf(buf + n, size - n, " peer=%d", root);
    }
}
