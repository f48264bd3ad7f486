#include <stdlib.h>

#include "win_util.h"

pal_status pal_win_fail(int32_t *err)
{
    return pal_result(err, PAL_E_SYSTEM, (int32_t)GetLastError());
}

bool pal_handle_valid(pal_fd fd, HANDLE *out)
{
    HANDLE h = (HANDLE)fd;
    if (h == NULL || h == INVALID_HANDLE_VALUE)
        return false;
    *out = h;
    return true;
}

DWORD pal_to_wide(const char *utf8, wchar_t **out)
{
    *out = NULL;
    int length = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, NULL, 0);
    if (length <= 0)
        return GetLastError();
    wchar_t *wide = malloc((size_t)length * sizeof(wchar_t));
    if (wide == NULL)
        return ERROR_NOT_ENOUGH_MEMORY;
    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, wide, length) != length) {
        DWORD error = GetLastError();
        free(wide);
        return error;
    }
    *out = wide;
    return 0;
}

DWORD pal_wait_overlapped(HANDLE file, OVERLAPPED *ov, BOOL started, DWORD *done)
{
    *done = 0;
    if (!started && GetLastError() != ERROR_IO_PENDING)
        return GetLastError();
    if (!GetOverlappedResult(file, ov, done, TRUE))
        return GetLastError();
    return 0;
}

void pal_overlapped_at(OVERLAPPED *ov, HANDLE event, uint64_t offset)
{
    ZeroMemory(ov, sizeof(*ov));
    ov->Offset = (DWORD)offset;
    ov->OffsetHigh = (DWORD)(offset >> 32);
    ov->hEvent = (HANDLE)((uintptr_t)event | 1);
}
