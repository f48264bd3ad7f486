/* Scratch directories for the Linux tests. */
#ifndef STORAGE_PAL_TEST_POSIX_UTIL_H
#define STORAGE_PAL_TEST_POSIX_UTIL_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#define TEST_PATH_MAX 4096

static char scratch_dir[TEST_PATH_MAX];

static inline void scratch_init(int argc, char **argv, const char *name)
{
    CHECK(argc >= 2);
    CHECK(mkdir(argv[1], 0755) == 0 || errno == EEXIST);
    int n = snprintf(scratch_dir, sizeof(scratch_dir), "%s/%s.%ld", argv[1], name,
                     (long)getpid());
    CHECK(n > 0 && (size_t)n < sizeof(scratch_dir));
    CHECK(mkdir(scratch_dir, 0755) == 0);
}

static inline void scratch_path(char *out, const char *file)
{
    int n = snprintf(out, TEST_PATH_MAX, "%s/%s", scratch_dir, file);
    CHECK(n > 0 && n < TEST_PATH_MAX);
}

static inline int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static inline void scratch_cleanup(void)
{
    CHECK(nftw(scratch_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

static inline int open_scratch(const char *file, int flags)
{
    char path[TEST_PATH_MAX];
    scratch_path(path, file);
    int fd = open(path, flags | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    return fd;
}

#endif /* STORAGE_PAL_TEST_POSIX_UTIL_H */
