/* The emulated devices (device.c): how many, and which one the calling thread uses. */
#ifndef USBYTE_EMU_CUDART_DEVICE_H
#define USBYTE_EMU_CUDART_DEVICE_H

#define EMU_MAX_DEVICES 64   /* the most USBYTE_EMU_DEVICES allows */

/* USBYTE_EMU_DEVICES (1..EMU_MAX_DEVICES, default 8), read on the first call. */
int emu_device_count(void);
/* The calling thread's current device (cudaSetDevice; 0 until it sets one). */
int emu_current_device(void);

#endif
