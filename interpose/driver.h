/* The driver's stream memory operations (libcuda.so.1), which schedule mode's completion counter
 * needs: the private stream writes it, completion streams wait for it (DESIGN.md section 3). */
#ifndef USBYTE_DRIVER_H
#define USBYTE_DRIVER_H

#include <cuda.h>

typedef CUresult (*ub_cu_mem_op_fn)(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);

typedef struct ub_driver_real {
    ub_cu_mem_op_fn wait_value64;
    ub_cu_mem_op_fn write_value64;
} ub_driver_real;

extern ub_driver_real ub_driver;

/* Resolves them once (thread-safe) from the libcuda.so.1 the process loaded (loading it if
 * needed); 0 when both are usable, else -1 with the reason logged once. */
int ub_driver_resolve(void);

#endif
