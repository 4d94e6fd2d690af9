#!/usr/bin/env python3
"""The test bed: models tensorsched was never tuned on, untuned, against ONNX Runtime as the oracle
(outputs compared) and as the anchor (latency ratio), at 1 and 2 threads.

  bench/every_model.py --random 200 --seed 1            # random networks (tensorsched dataset networks)
  bench/every_model.py --torchvision                    # every torchvision model that exports to ONNX
  bench/every_model.py --torchvision --only 'resnet18|vit_b_16'   # some of them
  bench/every_model.py --models DIR                     # every DIR/*.onnx

Per model and thread count: correct (every output within 1e-3 x max|ORT| + 1e-5 of ORT's, NaN
and Inf in the same places), tensorsched's and ORT's median ms, ORT / tensorsched, and the slowest
conv or matmul workload of >= 20 MFLOP with its % of this machine's one-core FMA peak (times the
threads). A model tensorsched refuses is listed with the reason (every unsupported op is named at
once), one ORT refuses too. Writes OUT/STEM.csv and .md (default docs/bench/every_model.*), which
docs/benchmarks.md quotes. Run nothing else meanwhile: the timings are the point.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util  # noqa: E402

REPO = bench_util.REPO
BINARY = os.path.join(REPO, "build", "tensorsched")
HEAVY = re.compile(r"Conv|MatMul|Gemm")  # the workloads whose % of peak is reported


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"


def error_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:160] if lines else ""


def compare(got_dir, want_dir):
    """'' when every ORT output in want_dir is matched by tensorsched's in got_dir, else why not."""
    for want_file in sorted(glob.glob(os.path.join(want_dir, "*.npy"))):
        name = os.path.basename(want_file)
        got_file = os.path.join(got_dir, name)
        if not os.path.exists(got_file):
            return f"no output {name[:-4]}"
        want, got = np.load(want_file), np.load(got_file)
        if want.shape != got.shape:
            return f"{name[:-4]}: shape {got.shape} vs ORT's {want.shape}"
        if want.dtype.kind == "f":
            if not np.array_equal(np.isnan(want), np.isnan(got)) or not np.array_equal(np.isinf(want), np.isinf(got)):
                return f"{name[:-4]}: NaN or Inf in other places"
            finite = np.isfinite(want)
            scale = float(np.max(np.abs(want[finite]))) if finite.any() else 0.0
            err = float(np.max(np.abs(want[finite].astype(np.float64) - got[finite]))) if finite.any() else 0.0
            if err > 1e-3 * scale + 1e-5:
                return f"{name[:-4]}: max error {err:.3g} (max |ORT| {scale:.3g})"
        elif not np.array_equal(want, got):
            return f"{name[:-4]}: values differ"
    return ""


def input_names(path):
    """File stem -> graph input name: bench/ort_run.js names its files after the tensor with every
    character outside [A-Za-z0-9._-] replaced by '_' (PyTorch names inputs 'onnx::Concat_1')."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    return {re.sub(r"[^A-Za-z0-9._-]", "_", i.name): i.name for i in model.graph.input}


def check_model(path, threads, iters, peak_1t, tmp):
    """One row per thread count for the model at `path`."""
    name = os.path.splitext(os.path.basename(path))[0]
    ins, ort_out = os.path.join(tmp, name + "_in"), os.path.join(tmp, name + "_ort")
    rows = []
    code, out, err = run([BINARY, "info", path], 120)
    if code != 0:
        return [dict(model=name, threads="-", correct="refused", ms="", ort_ms="", ratio="",
                     slowest="", slowest_peak_pct="", note=error_line(err or out))]
    code, out, err = run(["node", bench_util.ORT_RUN, path, "--iters", "1", "--warmup", "0", "--save-inputs", ins,
                          "--save-outputs", ort_out, "--json"], 300)
    ort_ok = code == 0
    names = input_names(path)
    for t in threads:
        row = dict(model=name, threads=t, correct="", ms="", ort_ms="", ratio="", slowest="", slowest_peak_pct="", note="")
        got = os.path.join(tmp, f"{name}_ts{t}")
        cmd = [BINARY, "run", path, "--threads", str(t), "--iters", str(iters), "--json", "--profile", "--output", got]
        for f in sorted(glob.glob(os.path.join(ins, "*.npy"))):
            stem = os.path.basename(f)[:-4]
            cmd += ["--input", f"{names.get(stem, stem)}={f}"]
        code, out, err = run(cmd, 900)
        if code != 0:
            row.update(correct="crash" if code >= 128 or code == 124 else "error", note=error_line(err or out))
            rows.append(row)
            continue
        j = json.loads(out.strip().splitlines()[-1])
        ms = j["latency_ms"]["median"] if isinstance(j["latency_ms"], dict) else j["latency_ms"]
        row["ms"] = float(f"{ms:.4g}")
        if ort_ok:
            why = compare(got, ort_out)
            row["correct"] = "yes" if not why else "WRONG"
            row["note"] = why
            ort = bench_util.ort_timing(path, t, iters)
            row["ort_ms"] = float(f"{ort['median_ms']:.4g}")
            row["ratio"] = float(f"{ort['median_ms'] / max(ms, 1e-6):.4g}")
        else:
            row["correct"] = "ort-refuses"
            row["note"] = error_line(err)
        heavy = [s for s in j.get("profile", []) if HEAVY.search(s["name"]) and s["gflops"] * s["ms"] >= 20]
        if heavy:
            worst = min(heavy, key=lambda s: s["gflops"])
            row["slowest"] = f"{worst['name']} {worst['key']} ({worst['gflops'] * worst['ms']:.0f} MFLOP)"
            row["slowest_peak_pct"] = round(100 * worst["gflops"] / (peak_1t * t), 1)
        rows.append(row)
    return rows


def random_models(count, seed, max_ops, out_dir):
    subprocess.run([BINARY, "dataset", "networks", "--count", str(count), "--seed", str(seed), "--max-ops", str(max_ops),
                    "--out", out_dir], check=True, capture_output=True)
    return sorted(glob.glob(os.path.join(out_dir, f"random_{seed}_*.onnx")))


def torchvision_models(out_dir, only):
    """Every torchvision model (torchvision.models.list_models) whose name matches `only` (a regex,
    None: all), exported at its usual input size; a model that does not export is reported by the
    exporter's message."""
    import torch
    import torchvision
    paths = []
    for name in torchvision.models.list_models():
        if only and not re.fullmatch(only, name):
            continue
        size = 299 if "inception" in name else 520 if "segmentation" in name or name.startswith(("fcn", "deeplab", "lraspp")) else 224
        shape = (1, 3, 16, 224, 224) if name.startswith("mvit") else \
            (1, 3, 16, 112, 112) if name in ("r3d_18", "mc3_18", "r2plus1d_18", "s3d") else (1, 3, size, size)
        example = (torch.rand(shape), torch.rand(shape)) if name.startswith("raft") else torch.rand(shape)  # two frames
        path = os.path.join(out_dir, name + ".onnx")
        try:
            try:  # segmentation and detection models fetch a pretrained backbone unless told not to
                model = torchvision.models.get_model(name, weights=None, weights_backbone=None).eval()
            except TypeError:
                model = torchvision.models.get_model(name, weights=None).eval()
            torch.onnx.export(model, example, path, opset_version=17, do_constant_folding=True)
            paths.append(path)
        except Exception as e:  # noqa: BLE001 - the exporter's own reason is the finding
            print(f"{name}: does not export: {str(e).splitlines()[0][:160]}", flush=True)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--random", type=int, default=0, help="random networks to check")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-ops", type=int, default=200)
    ap.add_argument("--torchvision", action="store_true")
    ap.add_argument("--only", help="with --torchvision: only the models whose name matches this regex")
    ap.add_argument("--models", help="a folder of ONNX models")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=10)
    bench_util.add_output_args(ap, "every_model")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    before = bench_util.host_check("before")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        if a.random:
            paths += random_models(a.random, a.seed, a.max_ops, os.path.join(tmp, "random"))
        if a.torchvision:
            os.makedirs(os.path.join(tmp, "tv"))
            paths += torchvision_models(os.path.join(tmp, "tv"), a.only)
        if a.models:
            paths += sorted(glob.glob(os.path.join(a.models, "*.onnx")))
        for i, p in enumerate(paths):
            r = check_model(p, threads, a.iters, before["gflops_1t"], tmp)
            rows += r
            for x in r:
                print(f"[{i + 1}/{len(paths)}] {x['model']} {x['threads']}T {x['correct']} {x['ms']} ms, ORT {x['ort_ms']} "
                      f"ms, ratio {x['ratio']}, slowest {x['slowest']} {x['slowest_peak_pct']}% {x['note']}", flush=True)
    after = bench_util.host_check("after")
    summary = []
    for t in threads:
        mine = [r for r in rows if r["threads"] == t]
        ratios = [r["ratio"] for r in mine if r["ratio"]]
        peaks = [r["slowest_peak_pct"] for r in mine if r["slowest_peak_pct"] != ""]
        summary.append(dict(threads=t, models=len(mine), correct=sum(r["correct"] == "yes" for r in mine),
                            wrong=sum(r["correct"] == "WRONG" for r in mine),
                            crashes=sum(r["correct"] == "crash" for r in mine),
                            errors=sum(r["correct"] == "error" for r in mine),
                            geomean_ratio=round(bench_util.geomean(ratios), 3) if ratios else "",
                            below_1x=sum(r < 1.0 for r in ratios),
                            heavy_below_25pct=sum(p < 25 for p in peaks),
                            fma_peak=bench_util.peak_summary(before, after)))
    refused = [r for r in rows if r["correct"] == "refused"]
    summary.append(dict(threads="-", models=len(refused), correct="refused", wrong="", crashes="", errors="",
                        geomean_ratio="", below_1x="", heavy_below_25pct="", fma_peak=""))
    if rows:
        bench_util.write_tables(rows, a.out, a.stem, summary)
    for s in summary:
        print(s)


if __name__ == "__main__":
    main()
