#include "test_posix_util.h"

#include <stdint.h>
#include <sys/mman.h>

static void the_real_rollup_is_read(void)
{
    pal_memory_stats stats;
    int32_t err;
    CHECK_OK(pal_read_memory_stats(&stats, &err));
    CHECK(stats.valid == (PAL_MEM_RSS | PAL_MEM_PSS | PAL_MEM_PRIVATE_DIRTY |
                          PAL_MEM_ANONYMOUS | PAL_MEM_SWAP));
    CHECK(stats.rss > 0 && stats.pss > 0 && stats.pss <= stats.rss);
    CHECK(stats.rss % 1024 == 0);
    printf("     rss %llu kB, pss %llu kB, private dirty %llu kB, anon %llu kB, swap %llu kB\n",
           (unsigned long long)stats.rss / 1024, (unsigned long long)stats.pss / 1024,
           (unsigned long long)stats.private_dirty / 1024,
           (unsigned long long)stats.anonymous / 1024, (unsigned long long)stats.swap / 1024);
}

static void a_page_range_of_a_mapping_can_be_prefetched(void)
{
    enum { PAGES = 64, PAGE = 4096 };
    int fd = open_scratch("mapped", O_RDWR | O_CREAT | O_TRUNC);
    CHECK(ftruncate(fd, PAGES * PAGE) == 0);
    void *map = mmap(NULL, PAGES * PAGE, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(map != MAP_FAILED);

    int32_t err;
    CHECK_OK(pal_prefetch(map, 8, 16, PAGE, &err));
    CHECK_OK(pal_prefetch(map, 3, 5, 1000, &err)); /* start not OS-page aligned */
    CHECK_OK(pal_prefetch(map, 0, 0, PAGE, &err));
    CHECK(pal_prefetch(NULL, 0, 1, PAGE, &err) == PAL_E_INVALID);
    CHECK(pal_prefetch(map, UINT64_MAX / 2, 4, PAGE, &err) == PAL_E_INVALID);

    CHECK(munmap(map, PAGES * PAGE) == 0);
    CHECK(close(fd) == 0);
}

int main(int argc, char **argv)
{
    scratch_init(argc, argv, "memory");
    RUN(the_real_rollup_is_read);
    RUN(a_page_range_of_a_mapping_can_be_prefetched);
    scratch_cleanup();
    return 0;
}
