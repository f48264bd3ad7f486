#!/usr/bin/env bash
# Builds everything in Release and runs the workload runner on fresh environments.
# Arguments go to the runner, e.g. --quick, --workloads W1,W2, --engines storage,lmdb.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/prerequisites.sh
dotnet build Storage.sln -c Release -nologo -v quiet
dotnet run -c Release --no-build --project benchmarks/Storage.Benchmarks -- "$@"
