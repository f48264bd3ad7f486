/* Process memory from /proc/self/smaps_rollup (Linux 4.14+): one read gives the
 * totals that would otherwise need a walk over every mapping in smaps. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "linux_util.h"

/* The rollup is about 1 KiB; the fields wanted come first in any case. */
#define PAL_SMAPS_ROLLUP_MAX_BYTES 8192u

PAL_API pal_status pal_read_memory_stats(pal_memory_stats *out, int32_t *err)
{
    if (out == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    int fd;
    do {
        fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return pal_result(err, errno == ENOENT ? PAL_E_UNSUPPORTED : PAL_E_SYSTEM, errno);

    char text[PAL_SMAPS_ROLLUP_MAX_BYTES];
    size_t length = 0;
    int error = 0;
    while (length < sizeof(text)) {
        ssize_t n = read(fd, text + length, sizeof(text) - length);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            error = errno;
            break;
        }
        if (n == 0)
            break;
        length += (size_t)n;
    }
    /* Read-only: close() cannot lose data, and the text is already read. */
    (void)close(fd);
    if (error != 0)
        return pal_result(err, PAL_E_SYSTEM, error);
    return pal_parse_smaps_rollup(text, length, out, err);
}
