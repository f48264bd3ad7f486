# Cross-compiles storagepal.dll for 64-bit Windows with mingw-w64
# (Debian: apt-get install gcc-mingw-w64-x86-64):
#   (the toolchain path must be absolute: it is read from the build dir)
#   cmake -S native/pal -B native/pal/build-windows \
#         -DCMAKE_TOOLCHAIN_FILE=$PWD/native/pal/cmake/mingw-w64-x86_64.cmake
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(PAL_MINGW_PREFIX x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${PAL_MINGW_PREFIX}-gcc)
set(CMAKE_RC_COMPILER ${PAL_MINGW_PREFIX}-windres)

set(CMAKE_FIND_ROOT_PATH /usr/${PAL_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)

# Run the portable tests under Wine when it is installed.
find_program(PAL_WINE NAMES wine64 wine PATHS /usr/lib/wine) # Debian keeps wine64 there
if(PAL_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${PAL_WINE})
endif()
