#!/usr/bin/python3
"""Baseline benchmark: tensorsched (default schedule) vs ONNX Runtime, PyTorch eager, TorchScript.

For each zoo model (the full export, models/full/NAME/model.onnx, written by
tools/export_models.py when missing) and each thread count (1 and 2) it measures, in the same run:
  - tensorsched: `tensorsched run --json` (median of --iters timed runs after a warm-up), plus the
    compile time with an empty code cache and the start-up time with a warm one (cache hits);
  - ONNX Runtime, the anchor: bench/ort_run.js on the same model file (CPU engine, intra-op
    threads = thread count, all graph optimizations; median of --iters runs after 3 warm-ups);
    needs scripts/install-bench-deps.sh;
  - PyTorch eager: the same torchvision/zoo network (tools/export_models.py builds it);
  - TorchScript: torch.jit.trace + torch.jit.freeze + torch.jit.optimize_for_inference.
  --no-torch leaves out the two PyTorch columns.
Ratios are other time / tensorsched time from the same run (above 1: tensorsched is faster):
ort_over_tensorsched, eager_over_tensorsched, torchscript_over_tensorsched. After the rows, the
geometric mean of each ratio over the models, per thread count, is printed and written under
the Markdown table. Writes CSV and Markdown. Run nothing else while it runs: 2 shared cores are
noisy.

  /usr/bin/python3 bench/baseline.py [--models resnet18,...] [--iters 10] [--threads 1,2]
                                     [--rounds 1] [--no-torch] [--out docs/bench] [--stem baseline]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))

import torch  # noqa: E402
import export_models  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util  # noqa: E402

DEFAULT_MODELS = list(export_models.MODELS)


def tensorsched(binary, model, threads, iters, cache):
    cmd = [binary, "run", model, "--json", "--threads", str(threads), "--iters", str(iters), "--cache-dir", cache]
    t0 = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.time() - t0
    j = json.loads(out.strip().splitlines()[-1])
    return j, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--zoo", default=os.path.join(REPO, "models", "full"))
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "tensorsched"))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=1,
                    help="each side runs this many times in turn; its fastest median is kept (a shared host's "
                         "slow phases only ever add time)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch eager and TorchScript")
    bench_util.add_output_args(ap, "baseline")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    peak = bench_util.host_check("before")
    thread_counts = [int(t) for t in args.threads.split(",")]
    rows = []
    raw_ratios = []  # (threads, unrounded ratios) per row, for the geometric means
    ort_version = None
    for name in args.models.split(","):
        model_path = os.path.join(args.zoo, name, "model.onnx")
        if not os.path.exists(model_path):
            # The graph-only copy export_models.py also writes goes to a scratch folder: the
            # shipped models/*.onnx stay as they are.
            with tempfile.TemporaryDirectory(prefix="tensorsched-graph-only-") as scratch:
                subprocess.run([sys.executable, os.path.join(REPO, "tools", "export_models.py"),
                                "--out", args.zoo, "--graph-only-dir", scratch, "--models", name],
                               check=True)
        # Compile once into a fresh cache (compile time), then start again from it (cache hits).
        cache = tempfile.mkdtemp(prefix="tensorsched-bench-")
        first, _ = tensorsched(args.binary, model_path, 1, 0, cache)
        second, warm_wall = tensorsched(args.binary, model_path, 1, 0, cache)
        if not args.no_torch:
            net, script, x = bench_util.torch_models(export_models, name)
        for threads in thread_counts:
            # --rounds: every side again in turn, each keeping its fastest round's median.
            ts_ms = ort_ms = eager_ms = script_ms = float("inf")
            if not args.no_torch:
                bench_util.set_torch_threads(threads)
            for _ in range(args.rounds):
                ts, _ = tensorsched(args.binary, model_path, threads, args.iters, cache)
                ts_ms = min(ts_ms, ts["latency_ms"]["median"])
                ort_round, ort_version = bench_util.ort_median_ms(model_path, threads, args.iters)
                ort_ms = min(ort_ms, ort_round)
                if not args.no_torch:
                    eager_ms = min(eager_ms, bench_util.torch_median_ms(net, x, args.iters))
                    script_ms = min(script_ms, bench_util.torch_median_ms(script, x, args.iters))
            row = {"model": name, "threads": threads, "tensorsched_ms": round(ts_ms, 3),
                   "ort_ms": round(ort_ms, 3)}
            ratios = {"ort_over_tensorsched": ort_ms / ts_ms}
            if not args.no_torch:
                row.update({"eager_ms": round(eager_ms, 3), "torchscript_ms": round(script_ms, 3)})
                ratios.update({"eager_over_tensorsched": eager_ms / ts_ms,
                               "torchscript_over_tensorsched": script_ms / ts_ms})
            row.update({k: round(v, 3) for k, v in ratios.items()})
            raw_ratios.append((threads, ratios))
            row.update({"workloads": first["workloads"], "compile_s": round(first["compile_seconds"], 2),
                        "cache_hit_s": round(second["compile_seconds"], 3)})
            rows.append(row)
            print(json.dumps(row), flush=True)
        shutil.rmtree(cache, ignore_errors=True)

    peak_after = bench_util.host_check("after")
    # Geometric mean of every ratio over the models, per thread count.
    summary = []
    for threads in thread_counts:
        sel = [r for t, r in raw_ratios if t == threads]
        s = {"threads": threads, "models": len(sel)}
        for c in sel[0]:
            s["geomean_" + c] = round(bench_util.geomean(r[c] for r in sel), 3)
        s["fma_peak_1t_all"] = bench_util.peak_summary(peak, peak_after)
        s["ort_version"] = ort_version
        summary.append(s)
        print("geomean " + json.dumps(s), flush=True)
    bench_util.write_tables(rows, args.out, args.stem, summary)


if __name__ == "__main__":
    main()
