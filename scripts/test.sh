#!/usr/bin/env bash
# Builds everything and runs the whole test suite; prints one closing line "N passed, N failed, N skipped".
#  1. the .NET tests on the native I/O backend (io_uring), then again on the managed backend;
#  2. the native layer's C tests (ctest);
#  3. the NuGet package: packed with both native libraries, restored by tests/Storage.PackageConsumer
#     from a local folder, which opens an environment, commits and reads, then kills a committing child
#     process three times and checks what recovery finds; then the samples (samples/GettingStarted, the
#     README's getting-started program, and samples/Orders) built against the same package and run;
#  4. the Windows build under Wine (installed through apt when running as root): the native layer's C tests,
#     and the package consumer published for win-x64, on the native layer and on the managed backend.
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

# Configures and builds the native layer in build directory $1 (more cmake arguments after it), runs its C tests
# and adds ctest's counts.
run_native_tests() {
  local dir=$1; shift
  local log; log=$(mktemp)
  { cmake -S native/pal -B "$dir" "$@" >/dev/null &&
    cmake --build "$dir" -j 2 >/dev/null &&
    ctest --test-dir "$dir" --output-on-failure; } 2>&1 | tee "$log"
  local native_status=${PIPESTATUS[0]}
  local summary; summary=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1)
  if [ -n "$summary" ]; then
    local native_failed native_total
    native_failed=$(echo "$summary" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
    native_total=$(echo "$summary" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/')
    passed=$((passed + native_total - native_failed)); failed=$((failed + native_failed))
  else
    failed=$((failed + 1))
  fi
  [ "$native_status" -eq 0 ] || status=1
  rm -f "$log"
}

echo "== native layer C tests"
if command -v cmake >/dev/null 2>&1 && [ -f /usr/include/liburing.h ]; then
  run_native_tests native/pal/build -DCMAKE_BUILD_TYPE=Release
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
     dotnet "$consumer/bin/Release/net10.0/Storage.PackageConsumer.dll" artifacts/packages/Storage.Embedded.*.nupkg; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); status=1
  fi
  # The samples, as applications build them: against the package just packed (samples/nuget.config).
  root=$PWD
  rm -rf samples/obj samples/GettingStarted/obj samples/GettingStarted/bin samples/Orders/obj samples/Orders/bin
  for sample in GettingStarted Orders; do
    echo "-- sample $sample"
    run_dir=$(mktemp -d)
    if dotnet build "samples/$sample" -c Release -nologo -v quiet &&
       (cd "$run_dir" && dotnet "$root/samples/$sample/bin/Release/net10.0/$sample.dll"); then
      passed=$((passed + 1))
    else
      failed=$((failed + 1)); status=1
    fi
    rm -rf "$run_dir"
  done
else
  echo "skipped: packing needs liburing-dev and gcc-mingw-w64-x86-64 (scripts/prerequisites.sh installs them as root)"
  skipped=$((skipped + 1))
fi

echo "== the Windows build under Wine"
# Debian ships Wine's 64-bit loader outside PATH.
wine=$(command -v wine64 || command -v wine || true)
[ -n "$wine" ] || [ ! -x /usr/lib/wine/wine64 ] || wine=/usr/lib/wine/wine64
if [ -z "$wine" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing: wine64"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wine64; } >/dev/null 2>&1
  [ -x /usr/lib/wine/wine64 ] && wine=/usr/lib/wine/wine64
fi
package=$(ls artifacts/packages/Storage.Embedded.*.nupkg 2>/dev/null | head -n 1)
if [ -n "$wine" ] && [ -n "$package" ] && command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
  export WINEDEBUG=-all
  # The C tests of the Windows library (ctest runs them under Wine when it finds Wine at configure time).
  run_native_tests native/pal/build-windows \
    -DCMAKE_TOOLCHAIN_FILE="$PWD/native/pal/cmake/mingw-w64-x86_64.cmake"
  # The package consumer as a Windows program: the package from the local folder, the win-x64 runtime from the
  # machine's own package sources.
  consumer=tests/Storage.PackageConsumer
  sources=(--source "$PWD/artifacts/packages")
  while read -r source; do sources+=(--source "$source"); done < <(cd / && dotnet nuget list source --format Short | awk '$1 ~ /^E/ { print $2 }')
  rm -rf "$consumer/obj" "$consumer/bin" artifacts/consumer-win-x64
  if dotnet publish "$consumer" -c Release -r win-x64 --self-contained -o artifacts/consumer-win-x64 "${sources[@]}" -nologo -v quiet; then
    windows_package="Z:$(realpath "$package" | tr '/' '\\')"
    for backend in native managed; do
      echo "-- package consumer under Wine, $backend backend"
      # Wine exits with 0 after an unhandled exception (its debugger takes the process over), so the program's own
      # last line must say ok as well.
      log=artifacts/consumer-win-x64-$backend.log
      # The runtime's write-xor-execute double mapping of code is off under Wine: on some hosts (Wine 8.0, Linux 6.18)
      # freeing a dynamic method's code through it fails inside the runtime ("Internal CLR error", in
      # DynamicResolver's finalizer) at a random point of the run, even for a build that passed elsewhere. It is the
      # runtime's hardening of its own code pages, not something the engine uses.
      DOTNET_EnableWriteXorExecute=0 STORAGE_IO_BACKEND=$backend "$wine" artifacts/consumer-win-x64/Storage.PackageConsumer.exe "$windows_package" >"$log" 2>&1
      code=$?
      cat "$log"
      if [ "$code" -eq 0 ] && grep -q '^package consumer: ok' "$log"; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1)); status=1
      fi
    done
  else
    failed=$((failed + 1)); status=1
  fi
else
  echo "skipped: needs Wine (wine64), the package built above and gcc-mingw-w64-x86-64"
  skipped=$((skipped + 1))
fi

echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
