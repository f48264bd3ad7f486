/* File and directory operations that .NET does not expose (Windows). */
#include <stdlib.h>
#include <string.h>

#include "win_util.h" /* windows.h first: winioctl.h depends on it */
#include <winioctl.h>

/* DeviceIoControl that also works on overlapped handles, which need an
 * OVERLAPPED even for a synchronous wait. Returns 0 or a Win32 error. */
static DWORD ioctl(HANDLE file, DWORD code, void *in, DWORD in_size)
{
    HANDLE event = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (event == NULL)
        return GetLastError();
    OVERLAPPED ov;
    pal_overlapped_at(&ov, event, 0);
    DWORD done;
    DWORD error = pal_wait_overlapped(
        file, &ov, DeviceIoControl(file, code, in, in_size, NULL, 0, NULL, &ov), &done);
    CloseHandle(event);
    return error;
}

static bool range_valid(uint64_t offset, uint64_t length)
{
    return offset <= (uint64_t)INT64_MAX && length <= (uint64_t)INT64_MAX - offset;
}

PAL_API pal_status pal_file_allocate(pal_fd fd, uint64_t offset, uint64_t length, int32_t *err)
{
    HANDLE file;
    if (!pal_handle_valid(fd, &file) || !range_valid(offset, length))
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    if (length == 0)
        return pal_ok(err);
    pal_fault fault = pal_fault_take(PAL_FAULT_FILE_ALLOCATE);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error);
    LARGE_INTEGER size;
    if (!GetFileSizeEx(file, &size))
        return pal_win_fail(err);
    LONGLONG end = (LONGLONG)(offset + length);
    if (end <= size.QuadPart)
        return pal_ok(err);
    /* Reserve the clusters, then move end-of-file like fallocate(mode 0). */
    FILE_ALLOCATION_INFO allocation = { .AllocationSize.QuadPart = end };
    if (!SetFileInformationByHandle(file, FileAllocationInfo, &allocation, sizeof(allocation))) {
        /* A file system (or Windows layer, Wine's) that cannot reserve clusters:
         * the caller extends the file without reserving, as on Linux. */
        DWORD error = GetLastError();
        if (error == ERROR_CALL_NOT_IMPLEMENTED || error == ERROR_NOT_SUPPORTED ||
            error == ERROR_INVALID_FUNCTION)
            return pal_result(err, PAL_E_UNSUPPORTED, (int32_t)error);
        return pal_result(err, PAL_E_SYSTEM, (int32_t)error);
    }
    FILE_END_OF_FILE_INFO eof = { .EndOfFile.QuadPart = end };
    if (!SetFileInformationByHandle(file, FileEndOfFileInfo, &eof, sizeof(eof)))
        return pal_win_fail(err);
    return pal_ok(err);
}

PAL_API pal_status pal_file_punch_hole(pal_fd fd, uint64_t offset, uint64_t length,
                                       int32_t *err)
{
    HANDLE file;
    if (!pal_handle_valid(fd, &file) || !range_valid(offset, length))
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    if (length == 0)
        return pal_ok(err);
    pal_fault fault = pal_fault_take(PAL_FAULT_PUNCH_HOLE);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error);
    /* Zeroing a range frees its clusters only in a sparse file. */
    FILE_SET_SPARSE_BUFFER sparse = { .SetSparse = TRUE };
    DWORD error = ioctl(file, FSCTL_SET_SPARSE, &sparse, sizeof(sparse));
    if (error == 0) {
        FILE_ZERO_DATA_INFORMATION zero = {
            .FileOffset.QuadPart = (LONGLONG)offset,
            .BeyondFinalZero.QuadPart = (LONGLONG)(offset + length),
        };
        error = ioctl(file, FSCTL_SET_ZERO_DATA, &zero, sizeof(zero));
    }
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, (int32_t)error);
}

PAL_API pal_status pal_hard_link(const char *existing_path, const char *new_path, int32_t *err)
{
    if (existing_path == NULL || new_path == NULL)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    wchar_t *existing_wide, *new_wide;
    DWORD error = pal_to_wide(existing_path, &existing_wide);
    if (error != 0)
        return pal_result(err, PAL_E_INVALID, (int32_t)error);
    error = pal_to_wide(new_path, &new_wide);
    if (error != 0) {
        free(existing_wide);
        return pal_result(err, PAL_E_INVALID, (int32_t)error);
    }
    pal_fault fault = pal_fault_take(PAL_FAULT_HARD_LINK);
    if (fault.mode != 0)
        error = (DWORD)fault.error;
    else if (!CreateHardLinkW(new_wide, existing_wide, NULL))
        error = GetLastError();
    free(existing_wide);
    free(new_wide);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, (int32_t)error);
}

/* Volume serial and 128-bit file id (ReFS ids do not fit in 64 bits). */
static DWORD file_identity(const char *path, FILE_ID_INFO *id)
{
    wchar_t *wide;
    DWORD error = pal_to_wide(path, &wide);
    if (error != 0)
        return error;
    /* No access rights needed to read the id; BACKUP_SEMANTICS allows directories. */
    HANDLE file = CreateFileW(wide, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                              NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
    free(wide);
    if (file == INVALID_HANDLE_VALUE)
        return GetLastError();
    if (!GetFileInformationByHandleEx(file, FileIdInfo, id, sizeof(*id)))
        error = GetLastError();
    CloseHandle(file);
    return error;
}

PAL_API pal_status pal_same_file(const char *path_a, const char *path_b, int32_t *same,
                                 int32_t *err)
{
    if (path_a == NULL || path_b == NULL || same == NULL)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    FILE_ID_INFO a, b;
    DWORD error = file_identity(path_a, &a);
    if (error == 0)
        error = file_identity(path_b, &b);
    if (error != 0)
        return pal_result(err, PAL_E_SYSTEM, (int32_t)error);
    *same = a.VolumeSerialNumber == b.VolumeSerialNumber &&
            memcmp(&a.FileId, &b.FileId, sizeof(a.FileId)) == 0;
    return pal_ok(err);
}

PAL_API pal_status pal_fsync_directory(const char *path, int32_t *err)
{
    /* NTFS journals directory changes itself, and creations and renames that
     * must be durable use write-through calls (MoveFileEx); nothing to do. */
    if (path == NULL)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    pal_fault fault = pal_fault_take(PAL_FAULT_DIRECTORY_SYNC);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error);
    return pal_ok(err);
}
