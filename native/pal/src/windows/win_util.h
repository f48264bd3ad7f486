/* Helpers shared by the Windows sources. */
#ifndef STORAGE_PAL_WIN_UTIL_H
#define STORAGE_PAL_WIN_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <windows.h>

#include "../pal_internal.h"

/* PAL_E_SYSTEM with GetLastError() in *err. */
pal_status pal_win_fail(int32_t *err);

/* Converts a managed handle to a HANDLE; false for NULL or INVALID_HANDLE_VALUE. */
bool pal_handle_valid(pal_fd fd, HANDLE *out);

/* UTF-8 to a malloc'ed UTF-16 string; returns 0 or a Win32 error code. */
DWORD pal_to_wide(const char *utf8, wchar_t **out);

/* Waits for an overlapped operation started on `file`; returns 0 or a Win32
 * error code, and the bytes transferred in *done. */
DWORD pal_wait_overlapped(HANDLE file, OVERLAPPED *ov, BOOL started, DWORD *done);

/* Prepares an OVERLAPPED for a transfer at `offset`. The event handle is
 * tagged with its low bit so that no completion packet is queued when the
 * handle is bound to an I/O completion port (as .NET binds async handles):
 * the runtime must never see an OVERLAPPED it did not issue. */
void pal_overlapped_at(OVERLAPPED *ov, HANDLE event, uint64_t offset);

#endif /* STORAGE_PAL_WIN_UTIL_H */
