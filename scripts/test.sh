#!/usr/bin/env bash
# Builds everything and runs the whole test suite; prints one closing line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/prerequisites.sh || exit 1
dotnet build Storage.sln -c Release -nologo -v quiet || exit 1
log=$(mktemp)
dotnet test Storage.sln -c Release --no-build -nologo "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# Sum the per-assembly summary lines ("Passed!  - Failed: 0, Passed: 12, Skipped: 0, ...").
count() { grep -E ' - Failed: +[0-9]+' "$log" | grep -oE "$1: +[0-9]+" | awk '{ s += $2 } END { print s + 0 }'; }
passed=$(count Passed); failed=$(count Failed); skipped=$(count Skipped)

# The native platform layer's C tests (ctest), when a C toolchain and liburing are there.
if command -v cmake >/dev/null 2>&1 && [ -f /usr/include/liburing.h ]; then
  native_log=$(mktemp)
  { cmake -S native/pal -B native/pal/build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build native/pal/build -j 2 >/dev/null &&
    ctest --test-dir native/pal/build --output-on-failure; } 2>&1 | tee "$native_log"
  native_status=${PIPESTATUS[0]}
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$native_log" | tail -n 1)
  if [ -n "$summary" ]; then
    native_failed=$(echo "$summary" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
    native_total=$(echo "$summary" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/')
    passed=$((passed + native_total - native_failed)); failed=$((failed + native_failed))
  else
    failed=$((failed + 1))
  fi
  [ "$native_status" -eq 0 ] || status=1
  rm -f "$native_log"
else
  echo "native layer not built (cmake or liburing-dev missing); its C tests were skipped"
fi
rm -f "$log"
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
