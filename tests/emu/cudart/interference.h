/* Interference between communication and compute (interference.c). */
#ifndef USBYTE_EMU_CUDART_INTERFERENCE_H
#define USBYTE_EMU_CUDART_INTERFERENCE_H

/* USBYTE_EMU_INTERFERENCE (0 when unset or bad, after one warning line). */
double emu_interference(void);
/* Compute work of `device`: runs fn(arg), then holds the caller (the stream's worker) F times
 * the time an NCCL operation occupied the device while fn ran. */
void emu_compute_run(int device, void (*fn)(void *), void *arg);

#endif
