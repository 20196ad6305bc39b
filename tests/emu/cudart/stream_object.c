/* Stream objects as the whole runtime reads them: the list of every object ever made (the hang
 * dump, the deadlock analysis, the end of a capture and the process's exit walk it), which
 * process runs each one's worker, and the text that says what the worker is doing, written by
 * the worker and readable in a signal handler.  Making, recycling and looking up objects, and
 * their workers, are stream.c's. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "dump_text.h"
#include "stream_object.h"

static _Atomic(struct CUstream_st *) all_streams;   /* append-only list, readable in a signal handler */
/* This process: set at load and in a forked child (emu_stream_objects_forked), so that the
 * child never takes an object of its parent for its own.  Read without a lock: it changes only
 * while one thread exists. */
static pid_t objects_pid;

struct CUstream_st *emu_all_streams(void)
{
    return atomic_load(&all_streams);
}

void emu_stream_object_add(struct CUstream_st *s)
{
    s->owner = objects_pid;
    struct CUstream_st *head = atomic_load(&all_streams);
    do
        s->all_next = head;
    while (!atomic_compare_exchange_weak(&all_streams, &head, s));
}

bool emu_stream_owned(const struct CUstream_st *s)
{
    return s->owner == objects_pid;
}

void emu_stream_objects_forked(void)
{
    objects_pid = getpid();
}

__attribute__((constructor)) static void stream_objects_init(void)
{
    objects_pid = getpid();
}

void emu_stream_set_activity(struct CUstream_st *s, const char *what)
{
    char text[EMU_ACTIVITY_LEN];
    snprintf(text, sizeof text, "%s", what);
    /* Release stores, so that a reader that sees one of the new characters (acquire) sees the
     * odd sequence before it too (no fences: ThreadSanitizer does not model them). */
    unsigned seq = atomic_load_explicit(&s->activity_seq, memory_order_relaxed);
    atomic_store_explicit(&s->activity_seq, seq + 1, memory_order_relaxed);
    size_t i = 0;
    do
        atomic_store_explicit(&s->activity[i], text[i], memory_order_release);
    while (text[i++] != '\0');
    atomic_store_explicit(&s->activity_seq, seq + 2, memory_order_release);
}

void emu_stream_read_activity(struct CUstream_st *s, char out[EMU_ACTIVITY_LEN])
{
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned before = atomic_load_explicit(&s->activity_seq, memory_order_acquire);
        if (before % 2 == 0) {
            for (size_t i = 0; i < EMU_ACTIVITY_LEN; i++)
                if ((out[i] = atomic_load_explicit(&s->activity[i], memory_order_acquire)) == '\0')
                    break;
            out[EMU_ACTIVITY_LEN - 1] = '\0';
            if (atomic_load_explicit(&s->activity_seq, memory_order_relaxed) == before)
                return;
        }
    }
    emu_put_str(out, 0, EMU_ACTIVITY_LEN, "(changing)");
    out[sizeof "(changing)" - 1] = '\0';
}
