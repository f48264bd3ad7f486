#include "test_util.h"

static void version_matches_the_header(void)
{
    CHECK(pal_version() == PAL_VERSION);
}

int main(void)
{
    RUN(version_matches_the_header);
    return 0;
}
