#!/usr/bin/env python3
"""The default rule against sampling: per conv / matmul workload of >= 20 MFLOP in random networks,
the untuned default's time against the best of K schedules drawn from the schedule space
(`tune --workloads KEY --trials K --policy random`, which measures the default too), at 1 thread.
The target: the default within 2x of that best for every such workload.

  bench/default_vs_sampled.py --count 10 --seed 1 --samples 32

Writes OUT/STEM.csv and .md (default docs/bench/default_vs_sampled.*). Run nothing else meanwhile.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util  # noqa: E402

BINARY = os.path.join(bench_util.REPO, "build", "tensorsched")
HEAVY = re.compile(r"Conv|MatMul|Gemm")


def heavy_workloads(model, threads):
    """(key, name, MFLOP) of the model's conv / matmul workloads of >= 20 MFLOP, from a profiled run."""
    p = subprocess.run([BINARY, "run", model, "--threads", str(threads), "--iters", "3", "--json", "--profile"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    j = json.loads(p.stdout.strip().splitlines()[-1])
    out = {}
    for s in j.get("profile", []):
        mflop = s["gflops"] * s["ms"]
        if HEAVY.search(s["name"]) and mflop >= 20:
            out[s["key"]] = (s["name"], mflop)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    bench_util.add_output_args(ap, "default_vs_sampled")
    a = ap.parse_args()
    before = bench_util.host_check("before")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([BINARY, "dataset", "networks", "--count", str(a.count), "--seed", str(a.seed), "--out", tmp],
                       check=True, capture_output=True)
        for model in sorted(glob.glob(os.path.join(tmp, "*.onnx"))):
            name = os.path.splitext(os.path.basename(model))[0]
            heavy = heavy_workloads(model, a.threads)
            if not heavy:
                continue
            db = os.path.join(tmp, name + ".db")
            cmd = [BINARY, "tune", model, "--db", db, "--trials", str(a.samples), "--policy", "random",
                   "--threads", str(a.threads), "--confirm-threads", str(a.threads), "--e2e-iters", "0",
                   "--network-evals", "0", "--json", "--workloads", *heavy]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{name}: tune failed: {(p.stderr or p.stdout).strip().splitlines()[-1][:160]}", flush=True)
                continue
            summary = json.loads(p.stdout)  # one indented JSON document
            for t in summary["tasks"]:
                if t["key"] not in heavy or not t.get("default_ms") or not t.get("best_ms"):
                    continue
                wname, mflop = heavy[t["key"]]
                row = dict(model=name, workload=f"{wname} {t['key']}", mflop=round(mflop), default_ms=t["default_ms"],
                           best_ms=t["best_ms"], default_over_best=round(t["default_ms"] / t["best_ms"], 3),
                           trials=t["trials"], best_policy=t.get("best_policy", ""))
                rows.append(row)
                print(row, flush=True)
    after = bench_util.host_check("after")
    if rows:
        ratios = [r["default_over_best"] for r in rows]
        summary = [dict(workloads=len(rows), geomean_default_over_best=round(bench_util.geomean(ratios), 3),
                        worst=max(ratios), over_2x=sum(r > 2 for r in ratios), fma_peak=bench_util.peak_summary(before, after))]
        bench_util.write_tables(rows, a.out, a.stem, summary)
        print(summary[0])


if __name__ == "__main__":
    main()
