#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "linux_util.h"

bool pal_fd_valid(pal_fd fd, int *out)
{
    if (fd < 0 || fd > INT_MAX)
        return false;
    *out = (int)fd;
    return true;
}

bool pal_range_valid(uint64_t offset, uint64_t length)
{
    return offset <= (uint64_t)INT64_MAX && length <= (uint64_t)INT64_MAX - offset;
}

void pal_iov_advance(struct iovec **iov, uint32_t *count, size_t written)
{
    struct iovec *v = *iov;
    uint32_t n = *count;
    while (n > 0 && written >= v->iov_len) {
        written -= v->iov_len;
        v++;
        n--;
    }
    if (n > 0 && written > 0) {
        v->iov_base = (char *)v->iov_base + written;
        v->iov_len -= written;
    }
    *iov = v;
    *count = n;
}

uint32_t pal_iov_clip(struct iovec *iov, uint32_t count, size_t limit, pal_iov_trim *trim)
{
    trim->iov = NULL;
    trim->saved_len = 0;
    uint32_t used = 0;
    while (used < count && limit > 0) {
        if (iov[used].iov_len > limit) {
            trim->iov = &iov[used];
            trim->saved_len = iov[used].iov_len;
            iov[used].iov_len = limit;
            return used + 1;
        }
        limit -= iov[used].iov_len;
        used++;
    }
    return used;
}

void pal_iov_untrim(pal_iov_trim *trim)
{
    if (trim->iov != NULL)
        trim->iov->iov_len = trim->saved_len;
    trim->iov = NULL;
}

int pal_parent_dir(const char *path, char *dir, size_t capacity)
{
    size_t length = strlen(path);
    if (length + 1 > capacity || capacity < 2)
        return ENAMETOOLONG;
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        memcpy(dir, ".", 2);
        return 0;
    }
    size_t dir_length = (size_t)(slash - path);
    if (dir_length == 0)
        dir_length = 1; /* a file in "/" */
    memcpy(dir, path, dir_length);
    dir[dir_length] = '\0';
    return 0;
}

int pal_sync_dir(const char *path)
{
    pal_fault fault = pal_fault_take(PAL_FAULT_DIRECTORY_SYNC);
    if (fault.mode != 0)
        return fault.error;
    int fd;
    do {
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return errno;
    int error = 0;
    if (fsync(fd) != 0)
        error = errno;
    /* close() of a read-only directory descriptor has nothing to flush; its
     * error cannot change the outcome of the fsync above. */
    (void)close(fd);
    return error;
}
