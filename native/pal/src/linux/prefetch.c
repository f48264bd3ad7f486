/* Read-ahead of mapped pages before a scan touches them. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "linux_util.h"

PAL_API pal_status pal_prefetch(void *base, uint64_t first_page, uint64_t page_count,
                                uint32_t page_size, int32_t *err)
{
    if (base == NULL || page_size == 0)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    if (page_count == 0)
        return pal_ok(err);
    uintptr_t start = (uintptr_t)base;
    if (first_page > (UINTPTR_MAX - start) / page_size ||
        page_count > (UINTPTR_MAX - start - first_page * page_size) / page_size)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    start += (uintptr_t)(first_page * page_size);
    uintptr_t end = start + (uintptr_t)(page_count * page_size);

    long os_page = sysconf(_SC_PAGESIZE);
    if (os_page <= 0)
        return pal_result(err, PAL_E_SYSTEM, errno);
    /* madvise() wants a page-aligned start; engine pages may be smaller than
     * or unaligned to OS pages. */
    start &= ~((uintptr_t)os_page - 1);
    if (madvise((void *)start, end - start, MADV_WILLNEED) != 0)
        return pal_result(err, PAL_E_SYSTEM, errno);
    return pal_ok(err);
}
