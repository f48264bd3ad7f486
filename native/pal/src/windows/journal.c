/*
 * Journal on Windows: WriteFileGather on a FILE_FLAG_NO_BUFFERING |
 * FILE_FLAG_WRITE_THROUGH handle, issued by the committing thread. The gather
 * API takes one memory page per segment, so each buffer is described page by
 * page; buffers, lengths and offsets must be PAL_JOURNAL_ALIGNMENT-aligned.
 */
#include <stdlib.h>

#include "win_util.h"

/* Zeroing writes this much per call. A multiple of PAL_JOURNAL_ALIGNMENT. */
#define PAL_JOURNAL_ZERO_CHUNK (1024u * 1024u)
/* Bytes per WriteFileGather call: its length is a DWORD, and this keeps the
 * segment array small. A multiple of PAL_JOURNAL_ALIGNMENT. */
#define PAL_JOURNAL_MAX_GATHER_BYTES (16u * 1024u * 1024u)
#define PAL_JOURNAL_MAX_GATHER_SEGMENTS (PAL_JOURNAL_MAX_GATHER_BYTES / PAL_JOURNAL_ALIGNMENT)

_Static_assert(PAL_JOURNAL_ZERO_CHUNK % PAL_JOURNAL_ALIGNMENT == 0, "zero chunk alignment");
_Static_assert(PAL_JOURNAL_MAX_GATHER_BYTES % PAL_JOURNAL_ALIGNMENT == 0, "gather alignment");

struct pal_journal {
    HANDLE file;
    HANDLE event;
    uint32_t mode;
};

static bool aligned(uint64_t value)
{
    return value % PAL_JOURNAL_ALIGNMENT == 0;
}

PAL_API pal_status pal_journal_open(const char *path, uint32_t flags, pal_journal **out,
                                    uint32_t *mode_out, int32_t *err)
{
    if (path == NULL || out == NULL || (flags & ~(uint32_t)PAL_JOURNAL_CREATE) != 0)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    *out = NULL;

    /* WriteFileGather writes one memory page per segment. */
    SYSTEM_INFO info;
    GetSystemInfo(&info);
    if (info.dwPageSize != PAL_JOURNAL_ALIGNMENT)
        return pal_result(err, PAL_E_UNSUPPORTED, ERROR_NOT_SUPPORTED);

    wchar_t *wide;
    DWORD error = pal_to_wide(path, &wide);
    if (error != 0)
        return pal_result(err, PAL_E_INVALID, (int32_t)error);

    pal_journal *j = malloc(sizeof(*j));
    if (j == NULL) {
        free(wide);
        return pal_result(err, PAL_E_NOMEM, ERROR_NOT_ENOUGH_MEMORY);
    }
    DWORD disposition = (flags & PAL_JOURNAL_CREATE) ? OPEN_ALWAYS : OPEN_EXISTING;
    DWORD share = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
    DWORD base = FILE_ATTRIBUTE_NORMAL | FILE_FLAG_WRITE_THROUGH | FILE_FLAG_OVERLAPPED;
    j->mode = PAL_JOURNAL_DIRECT;
    j->file = CreateFileW(wide, GENERIC_READ | GENERIC_WRITE, share, NULL, disposition,
                          base | FILE_FLAG_NO_BUFFERING, NULL);
    if (j->file == INVALID_HANDLE_VALUE && GetLastError() == ERROR_INVALID_PARAMETER) {
        /* Some network and virtual file systems refuse unbuffered I/O. */
        j->mode = PAL_JOURNAL_DSYNC_ONLY;
        j->file = CreateFileW(wide, GENERIC_READ | GENERIC_WRITE, share, NULL, disposition,
                              base, NULL);
    }
    error = j->file == INVALID_HANDLE_VALUE ? GetLastError() : 0;
    free(wide);
    if (error != 0) {
        free(j);
        return pal_result(err, PAL_E_SYSTEM, (int32_t)error);
    }
    j->event = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (j->event == NULL) {
        error = GetLastError();
        CloseHandle(j->file);
        free(j);
        return pal_result(err, PAL_E_SYSTEM, (int32_t)error);
    }
    if (mode_out != NULL)
        *mode_out = j->mode;
    *out = j;
    return pal_ok(err);
}

PAL_API pal_status pal_journal_close(pal_journal *j, int32_t *err)
{
    if (j == NULL)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    DWORD error = 0;
    if (!CloseHandle(j->file))
        error = GetLastError();
    if (!CloseHandle(j->event) && error == 0)
        error = GetLastError();
    free(j);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, (int32_t)error);
}

/* WriteFile until `length` bytes are written; returns 0 or a Win32 error. */
static DWORD write_fully(pal_journal *j, const uint8_t *data, uint64_t length, uint64_t offset)
{
    while (length > 0) {
        DWORD chunk = length > PAL_JOURNAL_MAX_GATHER_BYTES ? PAL_JOURNAL_MAX_GATHER_BYTES
                                                            : (DWORD)length;
        OVERLAPPED ov;
        pal_overlapped_at(&ov, j->event, offset);
        DWORD done;
        DWORD error = pal_wait_overlapped(j->file, &ov,
                                          WriteFile(j->file, data, chunk, NULL, &ov), &done);
        if (error != 0)
            return error;
        if (done == 0)
            return ERROR_WRITE_FAULT;
        data += done;
        offset += done;
        length -= done;
    }
    return 0;
}

/* One WriteFileGather of `count` page segments; returns 0 or a Win32 error. */
static DWORD gather(pal_journal *j, FILE_SEGMENT_ELEMENT *segments, uint32_t count,
                    uint64_t offset)
{
    segments[count].Buffer = NULL; /* the array is NULL-terminated */
    DWORD length = count * PAL_JOURNAL_ALIGNMENT;
    OVERLAPPED ov;
    pal_overlapped_at(&ov, j->event, offset);
    DWORD done;
    DWORD error = pal_wait_overlapped(j->file, &ov,
                                      WriteFileGather(j->file, segments, length, NULL, &ov),
                                      &done);
    if (error == 0 && done != length)
        error = ERROR_WRITE_FAULT; /* unbuffered writes complete whole or fail */
    return error;
}

PAL_API pal_status pal_journal_write(pal_journal *j, uint64_t offset, const pal_buffer *buffers,
                                     uint32_t buffer_count, int32_t *err)
{
    if (j == NULL || (buffer_count > 0 && buffers == NULL))
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    bool direct = j->mode == PAL_JOURNAL_DIRECT;
    if (direct && !aligned(offset))
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    for (uint32_t i = 0; i < buffer_count; i++) {
        const pal_buffer *b = &buffers[i];
        if (b->data == NULL ||
            (direct && (!aligned((uint64_t)(uintptr_t)b->data) || !aligned(b->length))))
            return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    }

    pal_fault fault = pal_fault_take(PAL_FAULT_JOURNAL_WRITE);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error); /* ERROR: the only mode here */

    DWORD error = 0;
    if (!direct) {
        for (uint32_t i = 0; i < buffer_count && error == 0; i++) {
            error = write_fully(j, buffers[i].data, buffers[i].length, offset);
            offset += buffers[i].length;
        }
        return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, (int32_t)error);
    }

    FILE_SEGMENT_ELEMENT *segments =
        malloc((PAL_JOURNAL_MAX_GATHER_SEGMENTS + 1) * sizeof(FILE_SEGMENT_ELEMENT));
    if (segments == NULL)
        return pal_result(err, PAL_E_NOMEM, ERROR_NOT_ENOUGH_MEMORY);
    uint32_t count = 0;
    uint64_t gather_offset = offset;
    for (uint32_t i = 0; i < buffer_count && error == 0; i++) {
        const uint8_t *data = buffers[i].data;
        for (uint64_t at = 0; at < buffers[i].length && error == 0; at += PAL_JOURNAL_ALIGNMENT) {
            segments[count++].Buffer = PtrToPtr64(data + at);
            if (count == PAL_JOURNAL_MAX_GATHER_SEGMENTS) {
                error = gather(j, segments, count, gather_offset);
                gather_offset += (uint64_t)count * PAL_JOURNAL_ALIGNMENT;
                count = 0;
            }
        }
    }
    if (error == 0 && count > 0)
        error = gather(j, segments, count, gather_offset);
    free(segments);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, (int32_t)error);
}

PAL_API pal_status pal_journal_presize(pal_journal *j, uint64_t size, int32_t *err)
{
    if (j == NULL || !aligned(size) || size > (uint64_t)INT64_MAX)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    pal_fault fault = pal_fault_take(PAL_FAULT_JOURNAL_PRESIZE);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error);
    FILE_END_OF_FILE_INFO eof = { .EndOfFile.QuadPart = (LONGLONG)size };
    if (!SetFileInformationByHandle(j->file, FileEndOfFileInfo, &eof, sizeof(eof)))
        return pal_win_fail(err);

    /* Zeros are written for real so that commits overwrite allocated, valid
     * data instead of extending the valid data length each time. */
    void *zeros = VirtualAlloc(NULL, PAL_JOURNAL_ZERO_CHUNK, MEM_COMMIT | MEM_RESERVE,
                               PAGE_READWRITE); /* page-aligned and zero-filled */
    if (zeros == NULL)
        return pal_win_fail(err);
    DWORD error = 0;
    for (uint64_t offset = 0; offset < size && error == 0; offset += PAL_JOURNAL_ZERO_CHUNK) {
        uint64_t left = size - offset;
        error = write_fully(j, zeros, left < PAL_JOURNAL_ZERO_CHUNK ? left : PAL_JOURNAL_ZERO_CHUNK,
                            offset);
    }
    VirtualFree(zeros, 0, MEM_RELEASE);
    if (error != 0)
        return pal_result(err, PAL_E_SYSTEM, (int32_t)error);
    /* Write-through covered the data; this makes the new size durable. */
    fault = pal_fault_take(PAL_FAULT_JOURNAL_SYNC);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error);
    if (!FlushFileBuffers(j->file))
        return pal_win_fail(err);
    return pal_ok(err);
}

PAL_API pal_status pal_journal_recycle(const char *old_path, const char *new_path,
                                       int32_t *err)
{
    if (old_path == NULL || new_path == NULL)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    wchar_t *old_wide, *new_wide;
    DWORD error = pal_to_wide(old_path, &old_wide);
    if (error != 0)
        return pal_result(err, PAL_E_INVALID, (int32_t)error);
    error = pal_to_wide(new_path, &new_wide);
    if (error != 0) {
        free(old_wide);
        return pal_result(err, PAL_E_INVALID, (int32_t)error);
    }
    /* MOVEFILE_WRITE_THROUGH returns once the rename is on disk: the
     * equivalent of the directory fsync on Linux. */
    pal_fault fault = pal_fault_take(PAL_FAULT_RENAME);
    if (fault.mode != 0)
        error = (DWORD)fault.error;
    else if (!MoveFileExW(old_wide, new_wide, MOVEFILE_WRITE_THROUGH)) /* never replaces a file */
        error = GetLastError();
    free(old_wide);
    free(new_wide);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, (int32_t)error);
}
