/* Shared by the files of the emulated driver library (libcuda.so.1). */
#ifndef USBYTE_EMU_CUDA_DRIVER_H
#define USBYTE_EMU_CUDA_DRIVER_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#define EMU_CU_EXPORT __attribute__((visibility("default")))

/* Maps a runtime error from the private interface to the driver's code. */
CUresult emu_cu_result(cudaError_t err);

#endif
