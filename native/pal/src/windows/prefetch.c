/* Read-ahead of mapped pages before a scan touches them (Windows 8+). */
#include "win_util.h"

PAL_API pal_status pal_prefetch(void *base, uint64_t first_page, uint64_t page_count,
                                uint32_t page_size, int32_t *err)
{
    if (base == NULL || page_size == 0)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    if (page_count == 0)
        return pal_ok(err);
    uintptr_t start = (uintptr_t)base;
    if (first_page > (UINTPTR_MAX - start) / page_size ||
        page_count > (UINTPTR_MAX - start - first_page * page_size) / page_size)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    start += (uintptr_t)(first_page * page_size);
    WIN32_MEMORY_RANGE_ENTRY range = {
        .VirtualAddress = (void *)start,
        .NumberOfBytes = (SIZE_T)(page_count * page_size),
    };
    if (!PrefetchVirtualMemory(GetCurrentProcess(), 1, &range, 0))
        return pal_win_fail(err);
    return pal_ok(err);
}
