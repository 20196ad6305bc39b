/* The runtime's error state (errors.c): what every entry point returns through. */
#ifndef USBYTE_EMU_CUDART_ERRORS_H
#define USBYTE_EMU_CUDART_ERRORS_H

#include <cuda_runtime_api.h>

/* Records err as the calling thread's last error (non-sticky) and returns it, or returns the
 * process's sticky error when one is set. */
cudaError_t emu_result(cudaError_t err);

#endif
