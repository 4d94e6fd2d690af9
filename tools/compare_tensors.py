#!/usr/bin/env python3
"""Where a model's output first differs from ONNX Runtime's: every float tensor the graph computes
becomes a graph output, ONNX Runtime and tensorsched run the copy on the same random inputs, and
the tensors are compared in graph order. The first rows printed are where a difference starts;
the ones after are what it feeds.

  /usr/bin/python3 tools/compare_tensors.py MODEL.onnx [--shape NAME=D0,D1,...] [--rows 12]

A tensor differs where |tensorsched - ORT| > rtol * max|ORT| + atol over its finite elements (the
test bed's rule, bench/every_model.py), or where NaN lies in other places. With every tensor an
output, tensorsched fuses less; a difference that only shows in the original model's fused
workloads does not show here.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, shape_inference

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(REPO, "build", "tensorsched")


def file_stem(name):
    """bench/ort_run.js names its files after the tensor with ':' and '/' replaced."""
    return name.replace(":", "__").replace("/", "_")


def every_tensor_an_output(src, dst):
    m = shape_inference.infer_shapes(onnx.load(src))
    infos = {v.name: v for v in m.graph.value_info}
    outputs = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            v = infos.get(o)
            if v is not None and o not in outputs and v.type.tensor_type.elem_type == TensorProto.FLOAT:
                m.graph.output.append(v)
                outputs.add(o)
    onnx.save(m, dst)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--shape", action="append", default=[], help="NAME=D0,D1,... for a symbolic input")
    ap.add_argument("--rows", type=int, default=12, help="differing tensors to print")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "every_tensor.onnx")
        m = every_tensor_an_output(a.model, path)
        ort = ["node", os.path.join(REPO, "bench", "ort_run.js"), path, "--iters", "1", "--warmup", "0",
               "--save-inputs", os.path.join(tmp, "in"), "--save-outputs", os.path.join(tmp, "ort")]
        ts = [BINARY, "run", path, "--iters", "1", "--output", os.path.join(tmp, "ts")]
        for s in a.shape:
            ort += ["--shape", s]
            ts += ["--shape", s]
        subprocess.run(ort, check=True, capture_output=True)
        stems = {file_stem(v.name): v.name for v in m.graph.input}
        for f in sorted(glob.glob(os.path.join(tmp, "in", "*.npy"))):
            stem = os.path.basename(f)[:-4]
            ts += ["--input", f"{stems.get(stem, stem)}={f}"]
        r = subprocess.run(ts, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"tensorsched failed: {r.stderr.strip()[-2000:]}")
        shown = 0
        for n in m.graph.node:
            for o in n.output:
                fo, ft = os.path.join(tmp, "ort", file_stem(o) + ".npy"), os.path.join(tmp, "ts", o + ".npy")
                if not (os.path.exists(fo) and os.path.exists(ft)):
                    continue
                want, got = np.load(fo).astype(np.float64), np.load(ft).astype(np.float64)
                if want.shape != got.shape:
                    print(f"{n.op_type:14s} {n.name} -> {o}: shape {got.shape}, ORT {want.shape}")
                    shown += 1
                    continue
                finite = np.isfinite(want) & np.isfinite(got)
                err = float(np.abs(want - got)[finite].max()) if finite.any() else 0.0
                scale = float(np.abs(want)[finite].max()) if finite.any() else 0.0
                nans = int((np.isnan(want) != np.isnan(got)).sum())
                if err > a.rtol * scale + a.atol or nans:
                    print(f"{n.op_type:14s} {n.name} -> {o} {list(want.shape)}: max error {err:.3g} "
                          f"(max |ORT| {scale:.3g}), NaN elsewhere at {nans}")
                    shown += 1
                if shown >= a.rows:
                    return
        if shown == 0:
            print("every compared tensor is within tolerance")


if __name__ == "__main__":
    main()
