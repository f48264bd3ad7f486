#!/usr/bin/env bash
# Builds everything and runs the whole test suite; prints one closing line "N passed, N failed, N skipped".
#  1. the .NET tests on the native I/O backend (io_uring), then again on the managed backend;
#  2. the native layer's C tests (ctest);
#  3. the NuGet package: packed with both native libraries, restored by tests/Storage.PackageConsumer
#     from a local folder, which opens an environment, commits and reads.
# Arguments go to both `dotnet test` runs; without any, the long opt-in tests (Category=Slow: the exhaustive fault
# campaign) are left out. `bash scripts/test.sh --filter Category=Slow` runs just those.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then set -- --filter "Category!=Slow"; fi
bash scripts/prerequisites.sh || exit 1
dotnet build Storage.sln -c Release -nologo -v quiet || exit 1

status=0
passed=0; failed=0; skipped=0
# Adds the per-assembly summary lines of a dotnet test log ("Passed!  - Failed: 0, Passed: 12, Skipped: 0, ...").
add_dotnet_counts() {
  count() { grep -E ' - Failed: +[0-9]+' "$1" | grep -oE "$2: +[0-9]+" | awk '{ s += $2 } END { print s + 0 }'; }
  local p f s
  p=$(count "$1" Passed); f=$(count "$1" Failed); s=$(count "$1" Skipped)
  if [ $((p + f + s)) -eq 0 ]; then f=1; fi # no summary: the run itself failed
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

for backend in native managed; do
  echo "== .NET tests, $backend I/O backend"
  log=$(mktemp)
  STORAGE_IO_BACKEND=$backend dotnet test Storage.sln -c Release --no-build -nologo "$@" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  add_dotnet_counts "$log"
  rm -f "$log"
done

echo "== native layer C tests"
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
  echo "skipped: cmake or liburing-dev is missing"
  skipped=$((skipped + 1))
fi

echo "== NuGet package and its consumer"
if command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 && [ -f /usr/include/liburing.h ]; then
  consumer=tests/Storage.PackageConsumer
  rm -rf artifacts/packages "$consumer/obj" "$consumer/bin"
  if dotnet pack src/Storage -c Release -o artifacts/packages -nologo -v quiet &&
     dotnet build "$consumer" -c Release -nologo -v quiet &&
     dotnet "$consumer/bin/Release/net10.0/Storage.PackageConsumer.dll" artifacts/packages/Storage.*.nupkg; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); status=1
  fi
else
  echo "skipped: packing needs liburing-dev and gcc-mingw-w64-x86-64 (scripts/prerequisites.sh installs them as root)"
  skipped=$((skipped + 1))
fi

echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
