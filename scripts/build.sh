#!/usr/bin/env bash
# All set-up for tensorsched: Debian packages, configure, build. Safe to run again.
#   scripts/build.sh [TARGET]   builds everything, or only TARGET and what it needs
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build ${1:+--target "$1"}
