#!/usr/bin/env bash
# Installs what the benchmarks need beyond scripts/install-deps.sh: ONNX Runtime for Node.js
# (npm package onnxruntime-node, CPU engine included), the anchor every benchmark compares with.
# It goes into build/bench-node/ (a build folder, ignored by git), where bench/ort_run.js looks.
# Idempotent: nothing is fetched when the pinned version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: 1.30.0 is what `npm view onnxruntime-node@1.30 version` resolves to. Benchmark numbers
# are only comparable under one version, so change it deliberately (and re-measure).
ORT_VERSION=1.30.0
PREFIX=build/bench-node
PKG_JSON=$PREFIX/node_modules/onnxruntime-node/package.json

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  # Debian's nodejs and npm are enough (onnxruntime-node ships prebuilt binaries).
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-bench-deps: installing nodejs npm"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi

installed=""
if [ -f "$PKG_JSON" ]; then
  installed=$(node -p "require('./$PKG_JSON').version")
fi
if [ "$installed" = "$ORT_VERSION" ]; then
  echo "install-bench-deps: onnxruntime-node $ORT_VERSION present in $PREFIX"
  exit 0
fi

echo "install-bench-deps: installing onnxruntime-node@$ORT_VERSION into $PREFIX${installed:+ (replacing $installed)}"
mkdir -p "$PREFIX"
# The postinstall script would download GPU plug-ins (CUDA, TensorRT) from the network; the CPU
# execution provider is inside the package, so skip it.
ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact \
  "onnxruntime-node@$ORT_VERSION"
node -e "const o = require('./$PREFIX/node_modules/onnxruntime-node');
         console.log('install-bench-deps: onnxruntime-node', o.env.versions.node || '$ORT_VERSION', 'loads')"
