#!/usr/bin/env bash
# All set-up, then the whole test suite (unit tests and ONNX conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j 2
