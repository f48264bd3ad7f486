#include "test_posix_util.h"

#include <stdint.h>
#include <stdlib.h>

#define BLOCK 4096u

static void allocate_reserves_and_punch_hole_frees_blocks(void)
{
    int32_t err;
    int fd = open_scratch("sparse", O_RDWR | O_CREAT | O_TRUNC);
    struct stat st;

    CHECK_OK(pal_file_allocate(fd, 0, 64 * BLOCK, &err));
    CHECK(fstat(fd, &st) == 0);
    CHECK(st.st_size == 64 * BLOCK);
    blkcnt_t allocated = st.st_blocks;
    CHECK(allocated * 512 >= 64 * BLOCK);

    uint8_t data[BLOCK];
    memset(data, 0x5A, sizeof(data));
    for (uint32_t i = 0; i < 64; i++)
        CHECK(pwrite(fd, data, BLOCK, (off_t)i * BLOCK) == BLOCK);
    CHECK(fsync(fd) == 0);

    CHECK_OK(pal_file_punch_hole(fd, 8 * BLOCK, 16 * BLOCK, &err));
    CHECK(fstat(fd, &st) == 0);
    CHECK(st.st_size == 64 * BLOCK); /* size kept */
    CHECK(st.st_blocks < allocated);
    uint8_t back[BLOCK];
    CHECK(pread(fd, back, BLOCK, 8 * BLOCK) == BLOCK);
    for (uint32_t i = 0; i < BLOCK; i++)
        CHECK(back[i] == 0);
    CHECK(pread(fd, back, BLOCK, 24 * BLOCK) == BLOCK);
    CHECK(back[0] == 0x5A);

    CHECK_OK(pal_file_allocate(fd, 0, 0, &err)); /* empty range: nothing to do */
    CHECK(pal_file_allocate(-1, 0, BLOCK, &err) == PAL_E_INVALID);
    CHECK(pal_file_punch_hole(fd, UINT64_MAX - 1, 2, &err) == PAL_E_INVALID);
    CHECK(close(fd) == 0);
}

static void hard_links_name_the_same_file(void)
{
    char original[TEST_PATH_MAX], link_path[TEST_PATH_MAX], other[TEST_PATH_MAX];
    scratch_path(original, "original");
    scratch_path(link_path, "linked");
    scratch_path(other, "other");
    CHECK(close(open_scratch("original", O_RDWR | O_CREAT)) == 0);
    CHECK(close(open_scratch("other", O_RDWR | O_CREAT)) == 0);

    int32_t err, same = -1;
    CHECK_OK(pal_hard_link(original, link_path, &err));
    CHECK_OK(pal_same_file(original, link_path, &same, &err));
    CHECK(same == 1);
    CHECK_OK(pal_same_file(original, original, &same, &err));
    CHECK(same == 1);
    CHECK_OK(pal_same_file(original, other, &same, &err));
    CHECK(same == 0);

    CHECK(pal_hard_link(original, link_path, &err) == PAL_E_SYSTEM && err == EEXIST);
    char missing[TEST_PATH_MAX];
    scratch_path(missing, "missing");
    CHECK(pal_same_file(original, missing, &same, &err) == PAL_E_SYSTEM && err == ENOENT);
    CHECK(pal_hard_link(missing, other, &err) == PAL_E_SYSTEM && err == ENOENT);
}

static void directories_can_be_synced(void)
{
    int32_t err = -1;
    CHECK_OK(pal_fsync_directory(scratch_dir, &err));
    CHECK(err == 0);
    char missing[TEST_PATH_MAX];
    scratch_path(missing, "no-such-dir");
    CHECK(pal_fsync_directory(missing, &err) == PAL_E_SYSTEM && err == ENOENT);
    CHECK(pal_fsync_directory(NULL, NULL) == PAL_E_INVALID); /* err is optional */
}

int main(int argc, char **argv)
{
    scratch_init(argc, argv, "files");
    RUN(allocate_reserves_and_punch_hole_frees_blocks);
    RUN(hard_links_name_the_same_file);
    RUN(directories_can_be_synced);
    scratch_cleanup();
    return 0;
}
