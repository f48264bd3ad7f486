#!/usr/bin/env bash
# Fuzzes everything that parses bytes from disk with AFL++ and SharpFuzz (see tests/Storage.Fuzz/README.md).
#
#   bash scripts/fuzz.sh [--seconds N] [--targets a,b,...] [--output DIR] [--timeout-ms N] [--resume] [--no-build]
#                        [--bin DIR] [--strict]
#
# Installs what is missing (afl++ through apt as root; the SharpFuzz tool from .config/dotnet-tools.json),
# publishes tests/Storage.Fuzz, instruments Storage.dll and Storage.Inspect.dll, then runs afl-fuzz on each
# target for N seconds (default 60) from its seed corpus. Prints per target the executions, speed, paths found and
# every crash or hang with its input path and the exception it replays to; exits 1 when there is any finding,
# 2 when fuzzing could not run at all. --resume continues the previous runs in --output instead of starting over;
# --no-build reuses the instrumented build of an earlier run in --bin (default artifacts/fuzz/bin), for several runs
# side by side, one per core. Known open findings (tests/Storage.Fuzz/KnownIssues.cs) do not count as crashes unless
# --strict is given.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=60
targets="file-header,tree-page,page-diff,journal-entry,environment"
output=artifacts/fuzz/runs
timeout_ms=""
resume=0
build=1
bin=artifacts/fuzz/bin
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --output) output="$2"; shift 2 ;;
    --timeout-ms) timeout_ms="$2"; shift 2 ;;
    --resume) resume=1; shift ;;
    --no-build) build=0; shift ;;
    --bin) bin="$2"; shift 2 ;;
    --strict) export STORAGE_FUZZ_STRICT=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

if ! command -v afl-fuzz >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing: afl++"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq afl++ >/dev/null || { echo "apt-get install afl++ failed" >&2; exit 2; }
  else
    echo "afl-fuzz is missing (Debian: apt-get install afl++); 'dotnet test' still replays the corpus and runs the in-process mutation pass" >&2
    exit 2
  fi
fi
dotnet tool restore >/dev/null || { echo "dotnet tool restore failed (the SharpFuzz.CommandLine tool)" >&2; exit 2; }

replay_dll=tests/Storage.Fuzz/bin/Release/net10.0/Storage.Fuzz.dll
if [ "$build" = 1 ] || [ ! -f "$bin/Storage.Fuzz.dll" ]; then
  echo "== building and instrumenting"
  # The instrumented copy is for afl-fuzz only: instrumented code outside afl-fuzz has no coverage map to write to.
  # Findings are replayed with the ordinary build.
  rm -rf "$bin"
  dotnet publish tests/Storage.Fuzz -c Release -o "$bin" -nologo -v quiet >/dev/null || exit 2
  dotnet build tests/Storage.Fuzz -c Release -nologo -v quiet >/dev/null || exit 2
  for assembly in Storage.dll Storage.Inspect.dll; do
    dotnet sharpfuzz "$bin/$assembly" >/dev/null || { echo "instrumenting $assembly failed" >&2; exit 2; }
  done
fi

# dotnet is not an AFL-instrumented binary (the coverage comes from the instrumented assemblies); the machines
# are shared, so no CPU pinning; crashes are reported through waitpid, not core dumps.
export AFL_SKIP_BIN_CHECK=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_FORKSRV_INIT_TMOUT=60000
# Three calibration runs per queue entry instead of eight: resuming a queue of a thousand environment inputs
# otherwise spends a quarter of an hour re-calibrating before it fuzzes.
export AFL_FAST_CAL=1
# An input that makes a reader allocate without bound fails fast with OutOfMemoryException (a finding) instead
# of taking the machine's memory first. afl-fuzz's own -m limit does not suit the runtime's address-space reservations.
export DOTNET_GCHeapHardLimit=0x80000000
# What the targets write goes to memory (see ScratchDirectory.cs), in a folder of this run's own: an execution that
# afl-fuzz kills on a timeout leaves its directory behind, and the folder goes when the run ends.
if [ -z "${STORAGE_FUZZ_TMP:-}" ]; then
  tmp_parent=/dev/shm; [ -d "$tmp_parent" ] || tmp_parent="${TMPDIR:-/tmp}"
  export STORAGE_FUZZ_TMP="$tmp_parent/storage-fuzz-run-$$"
  trap 'rm -rf "$STORAGE_FUZZ_TMP"' EXIT
fi
mkdir -p "$output"
findings=0
failed=0
summary=()
IFS=',' read -ra target_list <<< "$targets"
for target in "${target_list[@]}"; do
  out="$output/$target"
  corpus="tests/Storage.Fuzz/corpus/$target"
  [ -d "$corpus" ] || { echo "no corpus for target '$target' at $corpus" >&2; exit 2; }
  input="$corpus"
  if [ "$resume" = 1 ] && [ -d "$out/default/queue" ]; then
    input=-
  else
    rm -rf "$out"
  fi
  # The environment target writes, opens and syncs a whole directory per input: give it more time.
  t="${timeout_ms:-$([ "$target" = environment ] && echo 10000 || echo 5000)}"
  echo "== $target: afl-fuzz for ${seconds}s (exec timeout ${t} ms)"
  afl-fuzz -i "$input" -o "$out" -t "$t" -m none -V "$seconds" -- dotnet "$bin/Storage.Fuzz.dll" run "$target" >"$out.log" 2>&1
  rc=$?
  stats="$out/default/fuzzer_stats"
  if [ ! -f "$stats" ]; then
    echo "afl-fuzz did not start for $target (exit $rc); the end of $out.log:" >&2
    tail -n 25 "$out.log" >&2
    failed=1
    summary+=("$target: did not run")
    continue
  fi
  stat() { grep -E "^$1 " "$stats" | sed -E 's/^[^:]+: *//'; }
  crashes=$(find "$out/default/crashes" -type f -name 'id:*' 2>/dev/null | sort)
  hangs=$(find "$out/default/hangs" -type f -name 'id:*' 2>/dev/null | sort)
  line="$target: $(stat run_time) s, $(stat execs_done) execs ($(stat execs_per_sec)/s), corpus $(stat corpus_count) ($(stat corpus_found) found), edges $(stat edges_found), crashes $(stat saved_crashes), hangs $(stat saved_hangs)"
  echo "$line"
  summary+=("$line")
  # Each crash is replayed with the ordinary build: one that ends as a known open issue (an input afl-fuzz saved
  # before the issue was listed, or with --strict) is reported but not counted; any other is a finding.
  count=0
  for file in $crashes; do
    replay=$(DOTNET_GCHeapHardLimit=0x40000000 timeout 300 dotnet "$replay_dll" replay "$target" --verbose "$file" 2>&1)
    if [ -z "${STORAGE_FUZZ_STRICT:-}" ] && echo "$replay" | grep -q "^no new violations; 1 inputs hit known open issues"; then
      echo "  known: $file ($(echo "$replay" | grep -m1 -o 'known issue [a-z0-9-]*'))"
      continue
    fi
    count=$((count + 1))
    echo "  crash: $file"
    echo "$replay" | grep -v -E '^ +at (System|SharpFuzz)\.' | sed -n '2,12p' | sed 's/^/    /'
  done
  for file in $hangs; do
    count=$((count + 1))
    echo "  hang: $file"
  done
  findings=$((findings + count))
done

echo "== summary"
for line in "${summary[@]}"; do echo "$line"; done
if [ "$findings" -gt 0 ]; then
  echo "$findings findings (inputs under $output/<target>/default/{crashes,hangs}); reproduce one with:"
  echo "  dotnet $replay_dll replay <target> <file>"
  exit 1
fi
[ "$failed" = 0 ] || exit 2
echo "no findings"
