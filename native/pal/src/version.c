#include "pal.h"

PAL_API int32_t pal_version(void)
{
    return PAL_VERSION;
}
