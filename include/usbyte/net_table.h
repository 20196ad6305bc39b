/* A measured allreduce curve as nccl-tests' all_reduce_perf prints it, in the data/net/ format
 * that the emulator's network (USBYTE_EMU_NET) and usbyte-sim --net-table both read:
 *   - lines starting with '#' are comments, blank lines are skipped (a '\r' before the '\n' too);
 *   - every other line is a row "bytes<TAB>us" or "bytes<TAB>us<TAB>in_place_us": positive
 *     finite numbers, bytes strictly increasing, every row as wide as the first.
 * One reader, so that a file one of them takes is never refused by the other.  What the rows
 * mean between and beyond them is the reader's business (the emulator interpolates its network,
 * usbyte-sim builds the cost function's curve). */
#ifndef USBYTE_NET_TABLE_H
#define USBYTE_NET_TABLE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ub_net_row {
    double bytes, us, in_place_us; /* in_place_us = us when the table has two columns */
} ub_net_row;

typedef struct ub_net_table {
    int n;
    bool has_in_place;
    ub_net_row *rows;
} ub_net_table;

/* Parses `text`.  0, or -1 with one line (no newline) in err naming `name` and the line, e.g.
 *   curve.tsv: line 4: bytes 8 not above the previous row's 16
 * and t left empty (safe to free). */
int ub_net_table_parse(const char *text, const char *name, ub_net_table *t, char *err, size_t errlen);
/* The same from a file: only a regular file is read (a FIFO would block the reader forever). */
int ub_net_table_read(const char *path, ub_net_table *t, char *err, size_t errlen);
void ub_net_table_free(ub_net_table *t);

#endif
