/* Sizes and offsets of the structs the managed side declares with
 * StructLayout(Sequential). A failure here means pal.h changed: update the
 * managed declarations and bump PAL_VERSION. The managed side is 64-bit only. */
#include <stddef.h>

#include "pal.h"

_Static_assert(sizeof(void *) == 8, "the managed layouts assume 64-bit pointers");
_Static_assert(sizeof(pal_fd) == 8, "pal_fd is nint on the managed side");

_Static_assert(sizeof(pal_page_ref) == 24, "pal_page_ref layout");
_Static_assert(offsetof(pal_page_ref, data) == 8, "pal_page_ref layout");
_Static_assert(offsetof(pal_page_ref, page_count) == 16, "pal_page_ref layout");

_Static_assert(sizeof(pal_write_item) == 48, "pal_write_item layout");
_Static_assert(offsetof(pal_write_item, refs) == 8, "pal_write_item layout");
_Static_assert(offsetof(pal_write_item, ref_count) == 16, "pal_write_item layout");
_Static_assert(offsetof(pal_write_item, kind) == 24, "pal_write_item layout");
_Static_assert(offsetof(pal_write_item, result) == 28, "pal_write_item layout");
_Static_assert(offsetof(pal_write_item, bytes_written) == 32, "pal_write_item layout");
_Static_assert(offsetof(pal_write_item, runs) == 40, "pal_write_item layout");

_Static_assert(sizeof(pal_writer_stats) == 48, "pal_writer_stats layout");
_Static_assert(offsetof(pal_writer_stats, priority_error) == 40, "pal_writer_stats layout");

_Static_assert(sizeof(pal_buffer) == 16, "pal_buffer layout");
_Static_assert(offsetof(pal_buffer, length) == 8, "pal_buffer layout");

_Static_assert(sizeof(pal_memory_stats) == 48, "pal_memory_stats layout");
_Static_assert(offsetof(pal_memory_stats, valid) == 40, "pal_memory_stats layout");

_Static_assert(sizeof(pal_fault_rule) == 32, "pal_fault_rule layout");
_Static_assert(offsetof(pal_fault_rule, nth) == 8, "pal_fault_rule layout");
_Static_assert(offsetof(pal_fault_rule, bytes) == 16, "pal_fault_rule layout");
_Static_assert(offsetof(pal_fault_rule, error) == 24, "pal_fault_rule layout");
_Static_assert(offsetof(pal_fault_rule, times) == 28, "pal_fault_rule layout");

_Static_assert(sizeof(pal_fault_stats) == 264, "pal_fault_stats layout");
_Static_assert(offsetof(pal_fault_stats, fired) == 128, "pal_fault_stats layout");
_Static_assert(offsetof(pal_fault_stats, armed) == 256, "pal_fault_stats layout");
