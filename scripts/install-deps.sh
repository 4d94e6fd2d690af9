#!/usr/bin/env bash
# Installs every Debian package tensorsched needs to build, test and benchmark.
# Idempotent: packages already present are skipped, and `apt-get update` runs at most once.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libhalide14-0-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libsqlite3-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libxgboost-dev
  zlib1g-dev  # data set files (gzip JSONL)
  libopenmpi-dev openmpi-bin  # data sets and tuning over several hosts (mpirun)
  pybind11-dev python3-dev  # the Python module
  chromium  # the report test renders the HTML page headless
  python3 python3-numpy python3-onnx python3-torch python3-torchvision python3-matplotlib
  libopenblas0-pthread  # PyTorch baselines: Debian's torch uses whichever libblas.so.3 is installed
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
