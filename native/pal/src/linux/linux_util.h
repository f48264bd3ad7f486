/* Helpers shared by the Linux sources. */
#ifndef STORAGE_PAL_LINUX_UTIL_H
#define STORAGE_PAL_LINUX_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "../pal_internal.h"

/* Longest path accepted where a path is copied (parent-directory lookups). */
#define PAL_PATH_MAX 4096u

/* Converts a managed handle to a descriptor; false if it cannot be one. */
bool pal_fd_valid(pal_fd fd, int *out);

/* True when [offset, offset + length) fits in off_t. */
bool pal_range_valid(uint64_t offset, uint64_t length);

/* Drops `written` bytes from the front of an iovec array after a short write:
 * whole iovecs are skipped and the first partial one is trimmed in place. */
void pal_iov_advance(struct iovec **iov, uint32_t *count, size_t written);

/* A trimmed iovec and its length before the trim, to put back afterwards. */
typedef struct pal_iov_trim {
    struct iovec *iov; /* NULL when nothing was trimmed */
    size_t saved_len;
} pal_iov_trim;

/* Limits the first `count` iovecs to their first `limit` bytes for one
 * syscall: returns how many iovecs that takes (0 for limit 0) and trims the
 * last of them in place; pal_iov_untrim undoes the trim. */
uint32_t pal_iov_clip(struct iovec *iov, uint32_t count, size_t limit, pal_iov_trim *trim);
void pal_iov_untrim(pal_iov_trim *trim);

/* Copies the directory part of `path` ("." when there is none) into `dir`.
 * Returns 0 or an errno value. */
int pal_parent_dir(const char *path, char *dir, size_t capacity);

/* fsync of a directory by path; returns 0 or an errno value. Each call is a
 * PAL_FAULT_DIRECTORY_SYNC call of the fault seam. */
int pal_sync_dir(const char *path);

#endif /* STORAGE_PAL_LINUX_UTIL_H */
