/* The conditions of stream memory operations (values.c), which the deadlock analysis plays
 * forward too. */
#ifndef USBYTE_EMU_CUDART_VALUES_H
#define USBYTE_EMU_CUDART_VALUES_H

#include <stdbool.h>
#include <stdint.h>

/* Whether the word's value `now` satisfies condition (CU_STREAM_WAIT_VALUE_GEQ/EQ/AND/NOR,
 * compared on 32 or 64 bits) against `wanted`. */
bool emu_value_satisfied(unsigned condition, bool is64, uint64_t wanted, uint64_t now);
/* The 32- or 64-bit word at addr (an acquire load). */
uint64_t emu_value_load(const void *addr, bool is64);
/* The condition as the hang dump writes it (">=", "==", "&", "nor"). */
const char *emu_value_condition_name(unsigned condition);

#endif
