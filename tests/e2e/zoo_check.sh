#!/usr/bin/env bash
# End-to-end correctness: exports zoo models with PyTorch (tools/export_models.py, random
# weights, PyTorch's outputs as ONNX test data) and checks `tensorsched run --check` on each:
# max |tensorsched - PyTorch| <= 1e-3 * max |PyTorch| (the run command's rule).
#   zoo_check.sh TENSORSCHED_BINARY WORK_DIR [MODEL,...]
set -euo pipefail
bin=$1
work=$2
models=${3:-resnet18,mobilenet_v2,squeezenet1_0,efficientnet_b0,transformer,wavenet}
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
missing=""
for m in ${models//,/ }; do
  [ -f "$work/$m/test_data_set_0/output_0.pb" ] || missing="$missing,$m"
done
if [ -n "$missing" ]; then
  /usr/bin/python3 "$src/tools/export_models.py" --out "$work" --graph-only-dir "$work/graph-only" \
    --models "${missing#,}"
fi
failed=0
for m in ${models//,/ }; do
  if "$bin" run "$work/$m/model.onnx" --check "$work/$m" --iters 0 --cache-dir "$work/cache"; then
    echo "PASS $m"
  else
    echo "FAIL $m"
    failed=$((failed + 1))
  fi
done
n=$(echo "${models//,/ }" | wc -w)
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
