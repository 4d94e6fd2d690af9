#!/bin/bash
# Per-layer Winograd against direct convs inside one network, with one binary: `run --profile`
# with the plan and with --no-winograd, alternated over ROUNDS rounds of 10 runs, each step's
# fastest mean kept. Prints the steps whose workload differs (the convs the plan marked) and the
# sum of every step's minimum.
#   bench/winograd_vs_direct.sh MODEL THREADS [ROUNDS] [BINARY]
set -euo pipefail
model=$1
threads=$2
rounds=${3:-2}
binary=${4:-build/tensorsched}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for r in $(seq 1 "$rounds"); do
  "$binary" run "$model" --threads "$threads" --iters 10 --profile | grep -E '^ +[0-9]+ +[0-9.]+ ' > "$dir/wino_$r.txt"
  "$binary" run "$model" --threads "$threads" --iters 10 --profile --no-winograd | grep -E '^ +[0-9]+ +[0-9.]+ ' > "$dir/direct_$r.txt"
done
/usr/bin/python3 - "$dir" "$rounds" <<'PY'
import sys

folder, rounds = sys.argv[1], int(sys.argv[2])

def load(path):
    steps = {}
    for line in open(path):
        f = line.split()
        steps[int(f[0])] = (float(f[1]), f[4], f[6])  # ms, workload, first ONNX node
    return steps

wino = [load(f"{folder}/wino_{r}.txt") for r in range(1, rounds + 1)]
direct = [load(f"{folder}/direct_{r}.txt") for r in range(1, rounds + 1)]
total_w = total_d = 0.0
for s in sorted(wino[0]):
    w = min(p[s][0] for p in wino)
    d = min(p[s][0] for p in direct)
    total_w += w
    total_d += d
    if wino[0][s][1] != direct[0][s][1]:
        print(f"{s:3d} wino {w:8.3f} direct {d:8.3f} direct/wino {d / w:5.2f} {wino[0][s][2]}")
print(f"sum of step minima: wino {total_w:.2f} direct {total_d:.2f} ms")
PY
