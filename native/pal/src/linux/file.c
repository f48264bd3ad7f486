/* File and directory operations that .NET does not expose. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux_util.h"

/* `fault_kind`: the fault seam's kind of this call. */
static pal_status fallocate_range(pal_fd fd, int mode, uint64_t offset, uint64_t length,
                                  uint32_t fault_kind, int32_t *err)
{
    int native;
    if (!pal_fd_valid(fd, &native) || !pal_range_valid(offset, length))
        return pal_result(err, PAL_E_INVALID, EINVAL);
    if (length == 0)
        return pal_ok(err); /* fallocate() rejects an empty range */
    pal_fault fault = pal_fault_take(fault_kind);
    int rc;
    if (fault.mode != 0) {
        /* Classified below as the kernel's error would be (EOPNOTSUPP too). */
        rc = -1;
        errno = fault.error;
    } else {
        do {
            rc = fallocate(native, mode, (off_t)offset, (off_t)length);
        } while (rc != 0 && errno == EINTR);
    }
    if (rc != 0)
        return pal_result(err, errno == EOPNOTSUPP ? PAL_E_UNSUPPORTED : PAL_E_SYSTEM, errno);
    return pal_ok(err);
}

PAL_API pal_status pal_file_allocate(pal_fd fd, uint64_t offset, uint64_t length, int32_t *err)
{
    return fallocate_range(fd, 0, offset, length, PAL_FAULT_FILE_ALLOCATE, err);
}

PAL_API pal_status pal_file_punch_hole(pal_fd fd, uint64_t offset, uint64_t length,
                                       int32_t *err)
{
    return fallocate_range(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length,
                           PAL_FAULT_PUNCH_HOLE, err);
}

PAL_API pal_status pal_hard_link(const char *existing_path, const char *new_path, int32_t *err)
{
    if (existing_path == NULL || new_path == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    pal_fault fault = pal_fault_take(PAL_FAULT_HARD_LINK);
    if (fault.mode != 0)
        return pal_result(err, PAL_E_SYSTEM, fault.error);
    if (link(existing_path, new_path) != 0)
        return pal_result(err, PAL_E_SYSTEM, errno);
    return pal_ok(err);
}

PAL_API pal_status pal_same_file(const char *path_a, const char *path_b, int32_t *same,
                                 int32_t *err)
{
    if (path_a == NULL || path_b == NULL || same == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    struct stat a, b;
    if (stat(path_a, &a) != 0 || stat(path_b, &b) != 0)
        return pal_result(err, PAL_E_SYSTEM, errno);
    *same = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    return pal_ok(err);
}

PAL_API pal_status pal_fsync_directory(const char *path, int32_t *err)
{
    if (path == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    int error = pal_sync_dir(path);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, error);
}
