/* Process memory on Windows. Only the working set maps cleanly onto the
 * smaps_rollup fields, so only PAL_MEM_RSS is reported as valid. */
#include <string.h>

#include "win_util.h" /* windows.h first: psapi.h depends on it */
#include <psapi.h>

PAL_API pal_status pal_read_memory_stats(pal_memory_stats *out, int32_t *err)
{
    if (out == NULL)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    memset(out, 0, sizeof(*out));
    PROCESS_MEMORY_COUNTERS counters;
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof(counters)))
        return pal_win_fail(err);
    out->rss = counters.WorkingSetSize;
    out->valid = PAL_MEM_RSS;
    return pal_ok(err);
}
