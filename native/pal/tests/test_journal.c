#include "test_posix_util.h"

#include "pal_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/vfs.h>

#define ALIGN PAL_JOURNAL_ALIGNMENT
#define TMPFS_MAGIC_NUMBER 0x01021994

static void *aligned_block(size_t size, uint8_t fill)
{
    void *p = NULL;
    CHECK(posix_memalign(&p, ALIGN, size) == 0);
    memset(p, fill, size);
    return p;
}

static void check_bytes(const char *path, uint64_t offset, size_t length, uint8_t expected)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    uint8_t *buffer = malloc(length);
    CHECK(buffer != NULL);
    CHECK(pread(fd, buffer, length, (off_t)offset) == (ssize_t)length);
    for (size_t i = 0; i < length; i++)
        CHECK(buffer[i] == expected);
    free(buffer);
    CHECK(close(fd) == 0);
}

static off_t file_size(const char *path)
{
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return st.st_size;
}

static void a_journal_is_presized_written_and_recycled(void)
{
    char path[TEST_PATH_MAX], recycled[TEST_PATH_MAX];
    scratch_path(path, "journal-0001");
    scratch_path(recycled, "journal-0002");
    int32_t err;
    pal_journal *j;
    uint32_t mode = 0;
    CHECK_OK(pal_journal_open(path, PAL_JOURNAL_CREATE, &j, &mode, &err));
    printf("     journal mode on the working tree's disk: %s\n",
           mode == PAL_JOURNAL_DIRECT ? "O_DIRECT|O_DSYNC" : "O_DSYNC only");
    CHECK(mode == PAL_JOURNAL_DIRECT || mode == PAL_JOURNAL_DSYNC_ONLY);

    const uint64_t size = 2u * 1024u * 1024u + 3u * ALIGN; /* not a chunk multiple */
    CHECK_OK(pal_journal_presize(j, size, &err));
    CHECK(file_size(path) == (off_t)size);
    check_bytes(path, 0, (size_t)size, 0);

    /* Scattered aligned buffers written back to back. */
    uint8_t *a = aligned_block(ALIGN, 0xA1);
    uint8_t *b = aligned_block(3 * ALIGN, 0xB2);
    pal_buffer buffers[] = { { a, ALIGN }, { b, 3 * ALIGN } };
    CHECK_OK(pal_journal_write(j, 2 * ALIGN, buffers, 2, &err));
    check_bytes(path, 0, 2 * ALIGN, 0);
    check_bytes(path, 2 * ALIGN, ALIGN, 0xA1);
    check_bytes(path, 3 * ALIGN, 3 * ALIGN, 0xB2);
    check_bytes(path, 6 * ALIGN, ALIGN, 0);

    if (mode == PAL_JOURNAL_DIRECT) {
        /* O_DIRECT needs alignment; refused up front rather than by the kernel. */
        pal_buffer unaligned_data[] = { { a + 1, ALIGN } };
        pal_buffer unaligned_length[] = { { a, ALIGN - 512 } };
        CHECK(pal_journal_write(j, 0, unaligned_data, 1, &err) == PAL_E_INVALID);
        CHECK(pal_journal_write(j, 0, unaligned_length, 1, &err) == PAL_E_INVALID);
        CHECK(pal_journal_write(j, 512, buffers, 1, &err) == PAL_E_INVALID);
        CHECK(err == EINVAL);
    }
    CHECK(pal_journal_presize(j, ALIGN + 1, &err) == PAL_E_INVALID);

    /* Re-zeroing for reuse also shrinks a journal that had grown. */
    CHECK_OK(pal_journal_presize(j, 4 * ALIGN, &err));
    CHECK(file_size(path) == 4 * ALIGN);
    check_bytes(path, 0, 4 * ALIGN, 0);
    CHECK_OK(pal_journal_write(j, 0, buffers, 1, &err));
    CHECK_OK(pal_journal_close(j, &err));

    CHECK_OK(pal_journal_recycle(path, recycled, &err));
    CHECK(access(path, F_OK) != 0 && errno == ENOENT);
    check_bytes(recycled, 0, ALIGN, 0xA1);
    CHECK(pal_journal_recycle(path, recycled, &err) == PAL_E_SYSTEM && err == ENOENT);
    /* A file at the new name is never replaced. */
    int other = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    CHECK(other >= 0 && close(other) == 0);
    CHECK(pal_journal_recycle(path, recycled, &err) == PAL_E_SYSTEM && err == EEXIST);
    CHECK(access(path, F_OK) == 0);
    check_bytes(recycled, 0, ALIGN, 0xA1);
    CHECK(unlink(path) == 0);

    /* Reopening an existing journal without CREATE. */
    CHECK_OK(pal_journal_open(recycled, 0, &j, &mode, &err));
    CHECK_OK(pal_journal_close(j, &err));
    CHECK(pal_journal_open(path, 0, &j, &mode, &err) == PAL_E_SYSTEM && err == ENOENT);
    free(a);
    free(b);
}

/* Where renameat2 is missing (old kernels, some file systems), the rename is a
 * hard link and an unlink: the same outcome, and still never over a file. */
static void recycling_without_renameat2_links_and_unlinks(void)
{
    char path[TEST_PATH_MAX], recycled[TEST_PATH_MAX];
    scratch_path(path, "journal-norename");
    scratch_path(recycled, "journal-norename-next");
    pal_journal *j = NULL;
    uint32_t mode = 0;
    int32_t err = 0;
    uint8_t *a = aligned_block(ALIGN, 0xC3);
    pal_buffer buffers[1] = {{a, ALIGN}};
    CHECK_OK(pal_journal_open(path, PAL_JOURNAL_CREATE, &j, &mode, &err));
    CHECK_OK(pal_journal_write(j, 0, buffers, 1, &err));
    CHECK_OK(pal_journal_close(j, &err));

    pal_test_lack_renameat2(1);
    CHECK_OK(pal_journal_recycle(path, recycled, &err));
    CHECK(access(path, F_OK) != 0 && errno == ENOENT);
    struct stat st;
    CHECK(stat(recycled, &st) == 0 && st.st_nlink == 1);
    check_bytes(recycled, 0, ALIGN, 0xC3);
    /* A file at the new name stays, and so does the old name. */
    int other = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    CHECK(other >= 0 && close(other) == 0);
    CHECK(pal_journal_recycle(path, recycled, &err) == PAL_E_SYSTEM && err == EEXIST);
    CHECK(access(path, F_OK) == 0 && file_size(path) == 0);
    check_bytes(recycled, 0, ALIGN, 0xC3);
    CHECK(pal_journal_recycle(recycled, recycled, &err) == PAL_E_SYSTEM && err == EEXIST);
    check_bytes(recycled, 0, ALIGN, 0xC3);
    pal_test_lack_renameat2(0);
    CHECK(unlink(path) == 0 && unlink(recycled) == 0);
    free(a);
}

static void many_buffers_go_through_the_heap_path(void)
{
    enum { COUNT = 100 }; /* more than the on-stack iovec array */
    char path[TEST_PATH_MAX];
    scratch_path(path, "journal-many");
    int32_t err;
    pal_journal *j;
    uint32_t mode;
    CHECK_OK(pal_journal_open(path, PAL_JOURNAL_CREATE, &j, &mode, &err));
    uint8_t *block = aligned_block((size_t)COUNT * ALIGN, 0);
    pal_buffer buffers[COUNT];
    for (uint32_t i = 0; i < COUNT; i++) {
        memset(block + (size_t)i * ALIGN, (int)(i + 1), ALIGN);
        buffers[i] = (pal_buffer){ block + (size_t)i * ALIGN, ALIGN };
    }
    CHECK_OK(pal_journal_write(j, 0, buffers, COUNT, &err));
    for (uint32_t i = 0; i < COUNT; i++)
        check_bytes(path, (uint64_t)i * ALIGN, ALIGN, (uint8_t)(i + 1));
    CHECK_OK(pal_journal_close(j, &err));
    free(block);
}

static void tmpfs_reports_the_mode_it_got(void)
{
    /* Linux 6.6+ tmpfs accepts O_DIRECT, older ones do not: either is fine,
     * the point is that the open succeeds and says which one it used. */
    struct statfs fs;
    if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC_NUMBER) {
        printf("     skipped: /dev/shm is not a tmpfs here\n");
        return;
    }
    char path[TEST_PATH_MAX];
    snprintf(path, sizeof(path), "/dev/shm/storage-pal-journal.%ld", (long)getpid());
    int32_t err;
    pal_journal *j;
    uint32_t mode = 0;
    CHECK_OK(pal_journal_open(path, PAL_JOURNAL_CREATE, &j, &mode, &err));
    printf("     journal mode on tmpfs: %s\n",
           mode == PAL_JOURNAL_DIRECT ? "O_DIRECT|O_DSYNC" : "O_DSYNC only");
    CHECK_OK(pal_journal_presize(j, ALIGN, &err));
    CHECK_OK(pal_journal_close(j, &err));
    CHECK(unlink(path) == 0);
}

static void a_refused_o_direct_falls_back_to_dsync_only(void)
{
    char path[TEST_PATH_MAX];
    scratch_path(path, "journal-no-direct");
    int32_t err;
    pal_journal *j;
    uint32_t mode = 0;
    pal_test_refuse_direct_io(1);
    pal_status status = pal_journal_open(path, PAL_JOURNAL_CREATE, &j, &mode, &err);
    pal_test_refuse_direct_io(0);
    CHECK_OK(status);
    CHECK(mode == PAL_JOURNAL_DSYNC_ONLY);
    /* Without O_DIRECT, unaligned writes are accepted. */
    static const char text[] = "unaligned";
    pal_buffer buffer = { text, sizeof(text) };
    CHECK_OK(pal_journal_write(j, 3, &buffer, 1, &err));
    CHECK_OK(pal_journal_presize(j, ALIGN, &err));
    CHECK_OK(pal_journal_write(j, 3, &buffer, 1, &err));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    char back[sizeof(text)];
    CHECK(pread(fd, back, sizeof(back), 3) == (ssize_t)sizeof(back));
    CHECK(memcmp(back, text, sizeof(text)) == 0);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_journal_close(j, &err));
}

int main(int argc, char **argv)
{
    scratch_init(argc, argv, "journal");
    RUN(a_journal_is_presized_written_and_recycled);
    RUN(recycling_without_renameat2_links_and_unlinks);
    RUN(many_buffers_go_through_the_heap_path);
    RUN(tmpfs_reports_the_mode_it_got);
    RUN(a_refused_o_direct_falls_back_to_dsync_only);
    scratch_cleanup();
    return 0;
}
