#!/usr/bin/env bash
# The shipped artifact end to end: `tensorsched compile` a zoo model (exported by zoo_check.sh
# with PyTorch's outputs), build examples/run_model.c against the shared and the static library
# with the system C compiler, and check both match PyTorch's outputs on PyTorch's input; the
# library must need nothing but libc, libstdc++, libm and pthreads.
#   artifact_check.sh TENSORSCHED_BINARY ZOO_DIR SOURCE_DIR [MODEL]
set -euo pipefail
bin=$1
zoo=$2
src=$3
model=${4:-squeezenet1_0}
data="$zoo/$model/test_data_set_0"
[ -f "$data/output_0.pb" ] || { echo "no $data/output_0.pb: run zoo_check.sh first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
art="$work/art dir"  # a space in the path: nothing may go through a shell string

"$bin" compile "$zoo/$model/model.onnx" -o "$art" --name "$model" --cache-dir "$zoo/cache"
"$bin" convert "$data/input_0.pb" "$work/input_0.npy"
"$bin" convert "$data/output_0.pb" "$work/output_0.npy"

unexpected=$(ldd "$art/lib$model.so" | grep -v -E 'linux-vdso|ld-linux|libc\.so|libstdc\+\+|libm\.so|libgcc_s|libpthread|libdl' || true)
if [ -n "$unexpected" ]; then
  echo "lib$model.so needs more than the C/C++ runtime:"
  echo "$unexpected"
  exit 1
fi
exported=$(nm -D --defined-only "$art/lib$model.so" | awk '{print $3}' | grep -v '^ts_model_' || true)
if [ -n "$exported" ]; then
  echo "lib$model.so exports symbols outside the C API: $exported"
  exit 1
fi

cc -O2 -Wall -Werror "$src/examples/run_model.c" -I "$art" -L "$art" -l"$model" -Wl,-rpath,"$art" -lm -o "$work/run_shared"
cc -O2 "$src/examples/run_model.c" -I "$art" "$art/lib$model.a" -lstdc++ -lm -lpthread -ldl -o "$work/run_static"
"$work/run_shared" "$work/input_0.npy" --expect "$work/output_0.npy"
"$work/run_static" --threads 1 "$work/input_0.npy" --expect "$work/output_0.npy"
echo "PASS artifact $model"
