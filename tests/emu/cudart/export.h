/* What the CUDA runtime stand-in exports: the public runtime functions (cuda_runtime_api.h,
 * version node libcudart.so.13) and the emulator's private interface (../emu_internal.h,
 * USBYTE_EMU), each definition marked EMU_EXPORT.  The objects are built with hidden
 * visibility, so that nothing else of this folder is seen outside it; libcudart.map names the
 * version nodes. */
#ifndef USBYTE_EMU_CUDART_EXPORT_H
#define USBYTE_EMU_CUDART_EXPORT_H

#include <cuda_runtime_api.h>

#include "../emu_internal.h"

#define EMU_EXPORT __attribute__((visibility("default")))

#endif
