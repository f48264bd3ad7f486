/*
 * Journal file: the critical lane. Writes are synchronous pwritev calls on an
 * O_DIRECT|O_DSYNC descriptor, made by the committing thread itself so that a
 * commit never waits behind background page writes in the data writer's ring.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h> /* RENAME_NOREPLACE */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

#include "linux_util.h"

/* Buffers up to this count are described on the stack; more go to the heap. */
#define PAL_JOURNAL_STACK_IOVS 64u
/* Zeroing writes this much per call (each O_DSYNC): large enough to stream,
 * small enough that a commit's journal write queued behind one waits about
 * 2 ms on a 140 MB/s disk (1 MiB chunks put W1's commit p99 at 3.5-3.9 ms,
 * 256 KiB at 2.2-2.6 ms). A multiple of PAL_JOURNAL_ALIGNMENT. */
#define PAL_JOURNAL_ZERO_CHUNK (256u * 1024u)
/* Owner-only, as every file the engine creates. */
#define PAL_JOURNAL_FILE_MODE 0600

_Static_assert(PAL_JOURNAL_ZERO_CHUNK % PAL_JOURNAL_ALIGNMENT == 0,
               "zero chunk must keep O_DIRECT alignment");

struct pal_journal {
    int fd;
    uint32_t mode;
};

PAL_API pal_status pal_journal_open(const char *path, uint32_t flags, pal_journal **out,
                                    uint32_t *mode_out, int32_t *err)
{
    if (path == NULL || out == NULL || (flags & ~(uint32_t)PAL_JOURNAL_CREATE) != 0)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    *out = NULL;

    pal_journal *j = malloc(sizeof(*j));
    if (j == NULL)
        return pal_result(err, PAL_E_NOMEM, ENOMEM);

    int base = O_RDWR | O_CLOEXEC | O_DSYNC | ((flags & PAL_JOURNAL_CREATE) ? O_CREAT : 0);
    j->mode = PAL_JOURNAL_DIRECT;
    do {
#ifdef PAL_TEST_HOOKS
        if (pal_test_direct_io_refused()) {
            j->fd = -1;
            errno = EINVAL;
            break;
        }
#endif
        j->fd = open(path, base | O_DIRECT, PAL_JOURNAL_FILE_MODE);
    } while (j->fd < 0 && errno == EINTR);
    if (j->fd < 0 && errno == EINVAL) {
        /* tmpfs (before Linux 6.6) and some FUSE file systems refuse
         * O_DIRECT; O_DSYNC alone is still durable, through the page cache. */
        j->mode = PAL_JOURNAL_DSYNC_ONLY;
        do {
            j->fd = open(path, base, PAL_JOURNAL_FILE_MODE);
        } while (j->fd < 0 && errno == EINTR);
    }
    if (j->fd < 0) {
        int error = errno;
        free(j);
        return pal_result(err, PAL_E_SYSTEM, error);
    }
    if (mode_out != NULL)
        *mode_out = j->mode;
    *out = j;
    return pal_ok(err);
}

PAL_API pal_status pal_journal_close(pal_journal *j, int32_t *err)
{
    if (j == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    int error = close(j->fd) != 0 ? errno : 0;
    free(j);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, error);
}

static bool aligned(uint64_t value)
{
    return value % PAL_JOURNAL_ALIGNMENT == 0;
}

/* No limit on the first syscall of write_fully. */
#define PAL_NO_LIMIT SIZE_MAX

/* pwritev until every byte is written; returns 0 or an errno value. The first
 * syscall transfers at most `first_limit` bytes (the fault seam's short
 * write), so that the loop below continues a short write for real. */
static int write_fully(int fd, struct iovec *iov, uint32_t count, uint64_t offset,
                       size_t first_limit)
{
    size_t limit = first_limit;
    while (count > 0) {
        uint32_t batch = count > (uint32_t)IOV_MAX ? (uint32_t)IOV_MAX : count;
        pal_iov_trim trim = { NULL, 0 };
        if (limit != PAL_NO_LIMIT)
            batch = pal_iov_clip(iov, batch, limit, &trim);
        ssize_t n = batch == 0 ? 0 : pwritev(fd, iov, (int)batch, (off_t)offset);
        int error = n < 0 ? errno : 0;
        pal_iov_untrim(&trim);
        if (n < 0) {
            if (error == EINTR)
                continue;
            return error;
        }
        limit = PAL_NO_LIMIT;
        if (n == 0)
            return EIO; /* no progress: do not spin */
        offset += (uint64_t)n;
        pal_iov_advance(&iov, &count, (size_t)n);
    }
    return 0;
}

/* Writes the first `length` bytes of the iovecs and stops: the fault seam's
 * partial write. */
static int write_prefix(int fd, struct iovec *iov, uint32_t count, uint64_t offset,
                        uint64_t length)
{
    pal_iov_trim trim;
    uint32_t used = pal_iov_clip(iov, count, (size_t)length, &trim);
    /* The trim stays in place: write_fully consumes these iovecs. */
    return write_fully(fd, iov, used, offset, PAL_NO_LIMIT);
}

PAL_API pal_status pal_journal_write(pal_journal *j, uint64_t offset, const pal_buffer *buffers,
                                     uint32_t buffer_count, int32_t *err)
{
    if (j == NULL || (buffer_count > 0 && buffers == NULL))
        return pal_result(err, PAL_E_INVALID, EINVAL);
    bool direct = j->mode == PAL_JOURNAL_DIRECT;
    if (direct && !aligned(offset))
        return pal_result(err, PAL_E_INVALID, EINVAL);
    uint64_t total = 0;
    for (uint32_t i = 0; i < buffer_count; i++) {
        const pal_buffer *b = &buffers[i];
        if (b->data == NULL || b->length > SSIZE_MAX)
            return pal_result(err, PAL_E_INVALID, EINVAL);
        if (direct && (!aligned((uint64_t)(uintptr_t)b->data) || !aligned(b->length)))
            return pal_result(err, PAL_E_INVALID, EINVAL);
        total += b->length;
    }
    if (!pal_range_valid(offset, total))
        return pal_result(err, PAL_E_INVALID, EINVAL);
    if (total == 0)
        return pal_ok(err);
    pal_fault fault = pal_fault_take(PAL_FAULT_JOURNAL_WRITE);
    if (fault.mode == PAL_FAULT_ERROR)
        return pal_result(err, PAL_E_SYSTEM, fault.error);

    struct iovec stack_iov[PAL_JOURNAL_STACK_IOVS];
    struct iovec *iov = stack_iov;
    if (buffer_count > PAL_JOURNAL_STACK_IOVS) {
        iov = malloc((size_t)buffer_count * sizeof(*iov));
        if (iov == NULL)
            return pal_result(err, PAL_E_NOMEM, ENOMEM);
    }
    for (uint32_t i = 0; i < buffer_count; i++) {
        iov[i].iov_base = (void *)buffers[i].data; /* pwritev only reads it */
        iov[i].iov_len = (size_t)buffers[i].length;
    }
    uint64_t granule = direct ? PAL_JOURNAL_ALIGNMENT : 1;
    int error;
    if (fault.mode == PAL_FAULT_PARTIAL) {
        error = write_prefix(j->fd, iov, buffer_count, offset,
                             pal_fault_limit(&fault, total, granule));
        if (error == 0)
            error = fault.error;
    } else {
        size_t first_limit = fault.mode == PAL_FAULT_SHORT
                                 ? (size_t)pal_fault_limit(&fault, total, granule)
                                 : PAL_NO_LIMIT;
        error = write_fully(j->fd, iov, buffer_count, offset, first_limit);
    }
    if (iov != stack_iov)
        free(iov);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, error);
}

PAL_API pal_status pal_journal_presize(pal_journal *j, uint64_t size, int32_t *err)
{
    if (j == NULL || !aligned(size) || !pal_range_valid(0, size))
        return pal_result(err, PAL_E_INVALID, EINVAL);
    pal_fault fault = pal_fault_take(PAL_FAULT_JOURNAL_PRESIZE);
    if (fault.mode == PAL_FAULT_ERROR)
        return pal_result(err, PAL_E_SYSTEM, fault.error);

    /* Reserve the blocks up front so the journal cannot hit ENOSPC mid-commit. */
    if (size > 0 && fallocate(j->fd, 0, 0, (off_t)size) != 0 && errno != EOPNOTSUPP)
        return pal_result(err, PAL_E_SYSTEM, errno);
    /* A recycled journal may be longer than asked. */
    if (ftruncate(j->fd, (off_t)size) != 0)
        return pal_result(err, PAL_E_SYSTEM, errno);

    /* Fallocated extents are "unwritten": the first write to each converts it,
     * a metadata change that every O_DSYNC commit would then pay for. Writing
     * zeros once turns later commits into pure data overwrites. */
    void *zeros = NULL;
    int error = posix_memalign(&zeros, PAL_JOURNAL_ALIGNMENT, PAL_JOURNAL_ZERO_CHUNK);
    if (error != 0)
        return pal_result(err, PAL_E_NOMEM, error);
    memset(zeros, 0, PAL_JOURNAL_ZERO_CHUNK);
    uint64_t granule = j->mode == PAL_JOURNAL_DIRECT ? PAL_JOURNAL_ALIGNMENT : 1;
    uint64_t end = fault.mode == PAL_FAULT_PARTIAL ? pal_fault_limit(&fault, size, granule) : size;
    for (uint64_t offset = 0; offset < end && error == 0;) {
        uint64_t left = end - offset;
        size_t length = left < PAL_JOURNAL_ZERO_CHUNK ? (size_t)left : PAL_JOURNAL_ZERO_CHUNK;
        struct iovec iov = { .iov_base = zeros, .iov_len = length };
        /* A short write cuts the first syscall, which writes the first chunk. */
        size_t first_limit = fault.mode == PAL_FAULT_SHORT && offset == 0
                                 ? (size_t)pal_fault_limit(&fault, length, granule)
                                 : PAL_NO_LIMIT;
        error = write_fully(j->fd, &iov, 1, offset, first_limit);
        offset += length;
    }
    free(zeros);
    if (error == 0 && fault.mode == PAL_FAULT_PARTIAL)
        error = fault.error;
    if (error != 0)
        return pal_result(err, PAL_E_SYSTEM, error);
    /* O_DSYNC covered the data; this makes the new size durable as well. */
    fault = pal_fault_take(PAL_FAULT_JOURNAL_SYNC);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error);
    if (fdatasync(j->fd) != 0)
        return pal_result(err, PAL_E_SYSTEM, errno);
    return pal_ok(err);
}

/* rename(2) that fails with EEXIST instead of replacing a file at new_path:
 * renameat2 (called directly, so the library needs no glibc of 2.28 or later),
 * or a hard link and an unlink where the file system or kernel lacks it. */
static int rename_no_replace(const char *old_path, const char *new_path)
{
#ifdef PAL_TEST_HOOKS
    if (pal_test_renameat2_lacking())
        errno = ENOSYS;
    else
#endif
    if (syscall(SYS_renameat2, AT_FDCWD, old_path, AT_FDCWD, new_path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    if (link(old_path, new_path) != 0)
        return -1;
    if (unlink(old_path) == 0)
        return 0;
    int error = errno;
    (void)unlink(new_path); /* the file keeps its one old name */
    errno = error;
    return -1;
}

PAL_API pal_status pal_journal_recycle(const char *old_path, const char *new_path,
                                       int32_t *err)
{
    if (old_path == NULL || new_path == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    char old_dir[PAL_PATH_MAX], new_dir[PAL_PATH_MAX];
    int error = pal_parent_dir(old_path, old_dir, sizeof(old_dir));
    if (error == 0)
        error = pal_parent_dir(new_path, new_dir, sizeof(new_dir));
    if (error != 0)
        return pal_result(err, PAL_E_INVALID, error);

    pal_fault fault = pal_fault_take(PAL_FAULT_RENAME);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error);
    if (rename_no_replace(old_path, new_path) != 0)
        return pal_result(err, PAL_E_SYSTEM, errno);
    /* A rename is durable only once the directories holding both names are. */
    error = pal_sync_dir(new_dir);
    if (error == 0 && strcmp(old_dir, new_dir) != 0)
        error = pal_sync_dir(old_dir);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, error);
}
