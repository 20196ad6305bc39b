/* Whether the process is exiting (unloading.c). */
#ifndef USBYTE_EMU_CUDART_UNLOADING_H
#define USBYTE_EMU_CUDART_UNLOADING_H

#include <stdbool.h>

/* True once the process is exiting and the workers are being stopped. */
bool emu_unloading(void);
/* The library's destructor (stream.c), before it wakes and stops the workers. */
void emu_unloading_begin(void);

#endif
