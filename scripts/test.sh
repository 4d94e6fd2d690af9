#!/usr/bin/env bash
# All set-up, then the tests. CTest labels split them into tiers:
#   unit         GoogleTest cases of src/ (real ONNX files, Halide compiles, SQLite files), fast
#   e2e          whole networks against PyTorch, the artifact, the Python module, Halide's
#                autoscheduler searches
#   conformance  the ONNX backend test data (libonnx-testdata)
#   fuzz         mutated ONNX models (no crash, no hang, no silent wrong answer) and properties
#                checked over many random schedules
# With no argument every tier runs (what CI runs through .ci/run). --quick builds what the unit
# tier needs and runs it, for the edit-build-test loop. Other arguments go to ctest, so
# `scripts/test.sh -L e2e` runs one tier and `scripts/test.sh -R Winograd` some tests.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${CTEST_PARALLEL_LEVEL:-2}
if [ "${1:-}" = "--quick" ]; then
  shift
  scripts/build.sh tensorsched_tests
  exec ctest --test-dir build --output-on-failure -j "$jobs" -L '^unit$' "$@"
fi
scripts/build.sh
exec ctest --test-dir build --output-on-failure -j "$jobs" "$@"
