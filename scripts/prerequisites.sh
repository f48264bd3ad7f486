#!/usr/bin/env bash
# Installs what the build, the tests and the benchmarks need and the machine lacks.
# Safe to run again: it only installs what is missing.
set -euo pipefail

need_apt=()
have_lib() { ldconfig -p 2>/dev/null | grep -q "$1"; }

# LightningDB carries its own liblmdb, built against glibc 2.38; where glibc is older (Debian 12 has 2.36) the
# LMDB comparison runs on the system's liblmdb0 instead.
glibc_minor=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}' | cut -d. -f2)
if [ "${glibc_minor:-0}" -lt 38 ]; then have_lib 'liblmdb.so.0' || need_apt+=(liblmdb0); fi
[ -f /usr/include/liburing.h ] || need_apt+=(liburing-dev)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
# Cross-compiles the native layer for Windows, so that the NuGet package carries both libraries.
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need_apt+=(gcc-mingw-w64-x86-64)
# A font for the text of the benchmark chart (SkiaSharp, drawing it, reads fonts from /usr/share/fonts).
[ -n "$(find /usr/share/fonts \( -name '*.ttf' -o -name '*.otf' \) -print -quit 2>/dev/null)" ] || need_apt+=(fonts-dejavu-core)

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing: ${need_apt[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "Missing (install them to compare against every engine): ${need_apt[*]}" >&2
  fi
fi

if ! command -v dotnet >/dev/null 2>&1; then
  echo "The .NET 10 SDK is required (dotnet was not found on PATH)." >&2
  exit 1
fi
