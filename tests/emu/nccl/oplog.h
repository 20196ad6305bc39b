/* The op log (USBYTE_EMU_OPLOG): one line per NCCL operation the emulator ran, saying when the
 * emulated device really ran it next to when its time model says it should have ended.
 *
 * The emulator holds a stream until an operation's modelled end, but it is a set of threads on
 * a shared machine: a worker woken late, or data movement slower than the modelled link (under
 * sanitizers, ThreadSanitizer's above all), ends an operation after its modelled end.  Tests
 * that judge a measurement against the model read this log to know by how much the emulated
 * device missed it, instead of assuming a quiet machine.
 *
 * USBYTE_EMU_OPLOG is a path; "%r" in it becomes the process's RANK (as emu-run sets it; the
 * process id when unset) and "%p" its process id.  The file is appended to, one write per line:
 *
 *   # usbyte-emu oplog v1: comm rank nranks index kind bytes queued_ns arrival_ns start_ns data_end_ns model_end_ns end_ns
 *   3f2a91c0 0 2 17 allreduce 8388608 ...
 *
 * Times are CLOCK_MONOTONIC nanoseconds.  queued: when the stream could begin the operation
 * (the later of its enqueue and the stream's previous operation ending: what an event recorded
 * just before it is stamped with); arrival: when this rank's worker began it; start: when the
 * last rank arrived (a collective) or the point-to-point exchange could begin; data_end: when
 * this rank's data movement and arithmetic were done; model_end: start plus the modelled time;
 * end: when the worker released the stream (after model_end, by the sleep's wake-up lateness,
 * or after data_end when the data took longer than the model).  index is the collective's
 * number on the communicator (the first operation's for point-to-point, kind "p2p", whose bytes
 * are those sent plus those received).  Operations cut short by an abort or an error are not
 * logged. */
#ifndef USBYTE_EMU_NCCL_OPLOG_H
#define USBYTE_EMU_NCCL_OPLOG_H

#include <stddef.h>
#include <stdint.h>

struct ncclComm;

struct emu_oplog_rec {
    const char *kind;
    uint64_t index;
    size_t bytes;
    uint64_t queued_ns, arrival_ns, start_ns, data_end_ns, model_end_ns, end_ns;
};

/* Whether USBYTE_EMU_OPLOG names a log this process could open (looked up once). */
int emu_oplog_enabled(void);

/* Appends one record of communicator c (no-op when disabled). */
void emu_oplog_write(const struct ncclComm *c, const struct emu_oplog_rec *r);

#endif
