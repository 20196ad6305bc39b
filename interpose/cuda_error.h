/* A CUDA error in the runtime's diagnostics (cuda_error.c). */
#ifndef USBYTE_CUDA_ERROR_H
#define USBYTE_CUDA_ERROR_H

#include <cuda_runtime_api.h>

/* cudaGetErrorString's text for e, asked through the reentrancy guard (the caller may hold the
 * global lock), or "CUDA error" while the real function is not resolved. */
const char *ub_cuda_error_text(cudaError_t e);

#endif
