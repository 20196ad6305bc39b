/* Signal-safe text for the dumps (dump_text.c). */
#ifndef USBYTE_EMU_CUDART_DUMP_TEXT_H
#define USBYTE_EMU_CUDART_DUMP_TEXT_H

#include <stddef.h>

/* Appends to buf[at..cap-1), returns the new length. */
size_t emu_put_str(char *buf, size_t at, size_t cap, const char *s);
size_t emu_put_u64(char *buf, size_t at, size_t cap, unsigned long long v);
size_t emu_put_hex(char *buf, size_t at, size_t cap, unsigned long long v);
/* Writes all n bytes to fd (again after EINTR and short writes; gives up on an error). */
void emu_write_all(int fd, const char *buf, size_t n);

#endif
