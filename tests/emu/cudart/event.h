/* What the rest of the runtime asks of events (event.c): waiting for and releasing a record
 * instance, and the records of a graph launch's external event nodes. */
#ifndef USBYTE_EMU_CUDART_EVENT_H
#define USBYTE_EMU_CUDART_EVENT_H

#include <stdint.h>

#include <cuda_runtime_api.h>

struct emu_record;

/* Blocks until rec is done. */
void emu_record_wait(struct emu_record *rec);
/* Drops one reference to rec (NULL: none); the last one frees it. */
void emu_record_release(struct emu_record *rec);
/* At a graph launch, an external record node's record of `event` (NULL when the event
 * is gone), completed with emu_record_complete; an external wait's record to wait on. */
struct emu_record *emu_event_record_at_launch(cudaEvent_t event, uint64_t stream_id);
void emu_record_complete(struct emu_record *rec);
struct emu_record *emu_event_latest_record(cudaEvent_t event);

#endif
