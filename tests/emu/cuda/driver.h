/* Shared by the files of the emulated driver library (libcuda.so.1). */
#ifndef USBYTE_EMU_CUDA_DRIVER_H
#define USBYTE_EMU_CUDA_DRIVER_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#define EMU_CU_EXPORT __attribute__((visibility("default")))

/* What cuDriverGetVersion reports: a CUDA 13.0 driver. */
#define EMU_CU_DRIVER_VERSION 13000

/* Maps a runtime error from the private interface to the driver's code. */
CUresult emu_cu_result(cudaError_t err);

/* Returns `call` (a CUresult expression) run between the driver-domain CUPTI enter and exit
 * callbacks of NAME (id CUPTI_DRIVER_TRACE_CBID_##NAME), params pointing at its NAME##_params. */
#define EMU_CU_TRACED(NAME, params, call)                                                          \
    do {                                                                                           \
        uint64_t correlation_ = 0;                                                                 \
        uint32_t id_ = usbyteEmuApiCallback(1, CUPTI_DRIVER_TRACE_CBID_##NAME, 0, #NAME, (params), \
                                            NULL, 0, &correlation_);                               \
        CUresult r_ = (call);                                                                      \
        usbyteEmuApiCallback(1, CUPTI_DRIVER_TRACE_CBID_##NAME, 1, #NAME, (params), &r_, id_,      \
                             &correlation_);                                                       \
        return r_;                                                                                 \
    } while (0)

#endif
