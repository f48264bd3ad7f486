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
rm -f "$log"
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
