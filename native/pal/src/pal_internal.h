/* Internal declarations shared by the pal sources and the C tests; not part of
 * the managed contract. */
#ifndef STORAGE_PAL_INTERNAL_H
#define STORAGE_PAL_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pal.h"

/* Records `code` in *err (when given) and returns `status`. */
static inline pal_status pal_result(int32_t *err, pal_status status, int32_t code)
{
    if (err != NULL)
        *err = code;
    return status;
}

static inline pal_status pal_ok(int32_t *err)
{
    return pal_result(err, PAL_OK, 0);
}

/* ---- merging a write item's refs into writes (both platforms' writers) ---- */

/* The one rule that cuts a write item into write calls: ref i starts a new
 * write unless its first page follows the last page of ref i - 1 in the file
 * and the write holding ref i - 1 (`parts` refs, `bytes` bytes so far) can
 * still take it: fewer than `max_parts` refs, and at most `max_bytes` bytes
 * with ref i. A ref larger than `max_bytes` is a write of its own. */
static inline bool pal_starts_write(const pal_write_item *item, uint32_t i, uint32_t parts,
                                    uint64_t bytes, uint32_t max_parts, uint64_t max_bytes)
{
    if (i == 0 || parts >= max_parts)
        return true;
    const pal_page_ref *previous = &item->refs[i - 1];
    if (item->refs[i].page_number != previous->page_number + previous->page_count)
        return true;
    uint64_t size = (uint64_t)item->refs[i].page_count * item->page_size;
    return size > max_bytes || bytes > max_bytes - size;
}

/* Parses the text of /proc/self/smaps_rollup (values in kB) into bytes.
 * Portable so that the parser is tested on every platform. */
pal_status pal_parse_smaps_rollup(const char *text, size_t length, pal_memory_stats *out,
                                  int32_t *err);

/* ---- fault seam (fault.c) ------------------------------------------------ */

/* What a call site must do: mode 0 is "nothing, go ahead". */
typedef struct pal_fault {
    uint32_t mode; /* 0 or PAL_FAULT_ERROR / _PARTIAL / _SHORT */
    int32_t error;
    uint64_t bytes;
} pal_fault;

/* Non-zero while armed. Read with one relaxed load on every call site, so the
 * disarmed seam costs no more than that. */
extern atomic_uint pal_fault_armed;

/* Counts a call of `kind` and returns the fault a rule assigns it. */
pal_fault pal_fault_take_armed(uint32_t kind);

/* The fault for this call of `kind` (none while disarmed). Call it once per
 * call of the kind, where the call starts doing I/O. */
static inline pal_fault pal_fault_take(uint32_t kind)
{
    if (atomic_load_explicit(&pal_fault_armed, memory_order_relaxed) == 0)
        return (pal_fault){ 0, 0, 0 };
    return pal_fault_take_armed(kind);
}

/* The bytes a PARTIAL or SHORT fault lets through for a request of `request`
 * bytes written in units of `granule` (1, or the O_DIRECT alignment).
 * PARTIAL: `bytes`, at most the request, in whole granules (0 is allowed).
 * SHORT: 0 when asked for 0 (a write without progress); otherwise `bytes` in
 * whole granules, at least one, leaving at least one granule for the layer to
 * write; a request of one granule cannot be cut and passes whole. */
static inline uint64_t pal_fault_limit(const pal_fault *fault, uint64_t request, uint64_t granule)
{
    if (fault->mode == PAL_FAULT_PARTIAL) {
        uint64_t limit = fault->bytes < request ? fault->bytes : request;
        return limit - limit % granule;
    }
    if (fault->bytes == 0)
        return 0;
    if (request <= granule)
        return request;
    uint64_t cap = request - granule;
    uint64_t limit = fault->bytes < cap ? fault->bytes : cap;
    limit -= limit % granule;
    return limit == 0 ? granule : limit;
}

#ifdef PAL_TEST_HOOKS
/* Test seam: while set, opening a journal with O_DIRECT fails with EINVAL as
 * on file systems that refuse it (tmpfs before Linux 6.6, some FUSE). Only in
 * the test build of the library (storagepal_testable). */
void pal_test_refuse_direct_io(int refuse);
int pal_test_direct_io_refused(void);
/* Test seam: while set, renameat2 fails with ENOSYS, as on a kernel or file
 * system without it, so that a no-replace rename takes its link-and-unlink way. */
void pal_test_lack_renameat2(int lack);
int pal_test_renameat2_lacking(void);
#endif

#endif /* STORAGE_PAL_INTERNAL_H */
