/* Internal declarations shared by the pal sources and the C tests; not part of
 * the managed contract. */
#ifndef STORAGE_PAL_INTERNAL_H
#define STORAGE_PAL_INTERNAL_H

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

/* Parses the text of /proc/self/smaps_rollup (values in kB) into bytes.
 * Portable so that the parser is tested on every platform. */
pal_status pal_parse_smaps_rollup(const char *text, size_t length, pal_memory_stats *out,
                                  int32_t *err);

#ifdef PAL_TEST_HOOKS
/* Test seam: the next `count` data writes issued by any writer are cut to
 * roughly half their length, so the short-write path runs on demand. Only in
 * the test build of the library (storagepal_testable). */
void pal_test_truncate_next_writes(uint32_t count);
/* Consumes one unit of the budget above; returns 1 if this write is cut. */
int pal_test_take_truncation(void);
/* Test seam: while set, opening a journal with O_DIRECT fails with EINVAL as
 * on file systems that refuse it (tmpfs before Linux 6.6, some FUSE). */
void pal_test_refuse_direct_io(int refuse);
int pal_test_direct_io_refused(void);
#endif

#endif /* STORAGE_PAL_INTERNAL_H */
