#include <string.h>

#include "pal_internal.h"
#include "test_util.h"

static const char sample[] =
    "556c4b93c000-7ffe35950000 ---p 00000000 00:00 0                          [rollup]\n"
    "Rss:                1720 kB\n"
    "Pss:                 504 kB\n"
    "Pss_Dirty:           112 kB\n"
    "Pss_Anon:            999 kB\n"
    "Pss_File:            392 kB\n"
    "Shared_Clean:       1568 kB\n"
    "Private_Clean:        40 kB\n"
    "Private_Dirty:       112 kB\n"
    "Anonymous:           113 kB\n"
    "AnonHugePages:      2048 kB\n"
    "Swap:                  7 kB\n"
    "SwapPss:             777 kB\n"
    "Locked:                0 kB\n";

static void parses_the_five_fields_in_bytes(void)
{
    pal_memory_stats stats;
    int32_t err = -1;
    CHECK_OK(pal_parse_smaps_rollup(sample, strlen(sample), &stats, &err));
    CHECK(err == 0);
    CHECK(stats.rss == 1720u * 1024u);
    CHECK(stats.pss == 504u * 1024u); /* not Pss_Anon, Pss_Dirty or SwapPss */
    CHECK(stats.private_dirty == 112u * 1024u);
    CHECK(stats.anonymous == 113u * 1024u); /* not AnonHugePages */
    CHECK(stats.swap == 7u * 1024u);        /* not SwapPss */
    CHECK(stats.valid == (PAL_MEM_RSS | PAL_MEM_PSS | PAL_MEM_PRIVATE_DIRTY |
                          PAL_MEM_ANONYMOUS | PAL_MEM_SWAP));
}

static void missing_fields_are_not_marked_valid(void)
{
    static const char text[] = "Rss: 4 kB\nSwap: 0 kB"; /* no final newline */
    pal_memory_stats stats;
    int32_t err;
    CHECK_OK(pal_parse_smaps_rollup(text, strlen(text), &stats, &err));
    CHECK(stats.valid == (PAL_MEM_RSS | PAL_MEM_SWAP));
    CHECK(stats.rss == 4096u && stats.swap == 0 && stats.pss == 0);
}

static void malformed_values_are_rejected(void)
{
    static const char *bad[] = {
        "Rss: kB\n",
        "Rss: 12\n",
        "Pss: 12 MB\n",
        "Swap: 99999999999999999999999 kB\n",
        "Anonymous: 18014398509481984 kB\n", /* overflows when scaled to bytes */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pal_memory_stats stats;
        int32_t err = 0;
        CHECK(pal_parse_smaps_rollup(bad[i], strlen(bad[i]), &stats, &err) == PAL_E_INVALID);
        CHECK(err != 0);
    }
}

static void the_length_bounds_the_text(void)
{
    /* The parser must not read past `length` even without a terminator. */
    static const char text[] = "Rss: 8 kB\nPss: 4 kB\n";
    pal_memory_stats stats;
    int32_t err;
    CHECK_OK(pal_parse_smaps_rollup(text, 10, &stats, &err));
    CHECK(stats.valid == PAL_MEM_RSS && stats.rss == 8192u);
}

int main(void)
{
    RUN(parses_the_five_fields_in_bytes);
    RUN(missing_fields_are_not_marked_valid);
    RUN(malformed_values_are_rejected);
    RUN(the_length_bounds_the_text);
    return 0;
}
