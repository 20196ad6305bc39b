/* "Device" memory (memory.c): what the copies and memsets check their ranges against. */
#ifndef USBYTE_EMU_CUDART_MEMORY_H
#define USBYTE_EMU_CUDART_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

/* Whether [ptr, ptr+bytes) lies inside one live cudaMalloc/cudaMallocHost allocation. */
bool emu_range_valid(const void *ptr, size_t bytes);

#endif
