#!/usr/bin/python3
"""Tuned end to end: tensorsched after `tune --time T` vs its untuned default and ONNX Runtime.

For each model (the zoo export, build/zoo/NAME/model.onnx):
  1. `tensorsched tune MODEL --db DBDIR/NAME.db --time T --threads TT --policy P` when that
     database does not exist yet (--retune tunes again on top of it);
  2. for each thread count: `tensorsched run` without a database (default schedules), `run --db`
     (each workload's fastest measured schedule) and ONNX Runtime (bench/ort_run.js), in
     --rounds rounds that alternate the three, each the median of --iters runs; a version's time
     is the median of its round medians (2 shared cores drift over minutes: alternating keeps the
     drift out of the ratios).
Ratios are other / tensorsched-tuned from the same rounds (above 1: tuned tensorsched is faster).
Writes DBDIR/*.db, OUT/STEM.csv and OUT/STEM.md with geometric means per thread count.
Run nothing else while it runs.

  /usr/bin/python3 bench/tuned.py [--models resnet18,...] [--time 600] [--tune-threads 2]
      [--policy random] [--db-dir build/tuned] [--threads 1,2] [--iters 30] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util  # noqa: E402

MODELS = "resnet18,resnet50,mobilenet_v2,squeezenet1_0,efficientnet_b0,transformer"


def run_ms(binary, model, threads, iters, db=None):
    cmd = [binary, "-q", "run", model, "--json", "--threads", str(threads), "--iters", str(iters)]
    if db:
        cmd += ["--db", db]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["latency_ms"]["median"]


def tune(binary, model, db, args):
    cmd = [binary, "-q", "tune", model, "--db", db, "--time", str(args.time), "--threads", str(args.tune_threads),
           "--policy", args.policy, "--e2e-iters", "0"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--zoo", default=os.path.join(bench_util.REPO, "build", "zoo"))
    ap.add_argument("--binary", default=os.path.join(bench_util.REPO, "build", "tensorsched"))
    ap.add_argument("--db-dir", default=os.path.join(bench_util.REPO, "build", "tuned"))
    ap.add_argument("--time", type=float, default=600, help="tuning seconds per model")
    ap.add_argument("--tune-threads", type=int, default=2, help="threads the tuned code is measured with")
    ap.add_argument("--policy", default="random")
    ap.add_argument("--retune", action="store_true", help="tune again even where the database exists")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    bench_util.add_output_args(ap, "tuned")
    args = ap.parse_args()
    os.makedirs(args.db_dir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    peak = bench_util.host_check("before")
    rows, ratios = [], []
    for name in args.models.split(","):
        model = os.path.join(args.zoo, name, "model.onnx")
        db = os.path.join(args.db_dir, name + ".db")
        tune_s = 0.0
        if args.retune or not os.path.exists(db):
            tune_s = tune(args.binary, model, db, args)
            print(f"{name}: tuned {tune_s:.0f} s into {db}", flush=True)
        run_ms(args.binary, model, 1, 1)      # compile the default schedules into the code cache
        run_ms(args.binary, model, 1, 1, db)  # and the tuned ones
        for threads in [int(t) for t in args.threads.split(",")]:
            times = {"default": [], "tuned": [], "ort": []}
            ort_version = None
            for _ in range(args.rounds):
                times["default"].append(run_ms(args.binary, model, threads, args.iters))
                times["tuned"].append(run_ms(args.binary, model, threads, args.iters, db))
                ms, ort_version = bench_util.ort_median_ms(model, threads, args.iters)
                times["ort"].append(ms)
            med = {k: statistics.median(v) for k, v in times.items()}
            r = {"ort_over_tuned": med["ort"] / med["tuned"], "default_over_tuned": med["default"] / med["tuned"],
                 "ort_over_default": med["ort"] / med["default"]}
            ratios.append((threads, r))
            row = {"model": name, "threads": threads, "tuned_ms": round(med["tuned"], 3),
                   "default_ms": round(med["default"], 3), "ort_ms": round(med["ort"], 3)}
            row.update({k: round(v, 3) for k, v in r.items()})
            row.update({"tune_s": round(tune_s), "tune_threads": args.tune_threads, "policy": args.policy,
                        "rounds": "/".join(f"{a:.2f},{b:.2f},{c:.2f}" for a, b, c in
                                           zip(times["default"], times["tuned"], times["ort"])),
                        "ort_version": ort_version})
            rows.append(row)
            print(json.dumps(row), flush=True)
    peak_after = bench_util.host_check("after")
    summary = []
    for threads in sorted({t for t, _ in ratios}):
        sel = [r for t, r in ratios if t == threads]
        s = {"threads": threads, "models": len(sel)}
        for k in sel[0]:
            s["geomean_" + k] = round(bench_util.geomean(r[k] for r in sel), 3)
        s["min_ort_over_tuned"] = round(min(r["ort_over_tuned"] for r in sel), 3)
        s["fma_peak_1t_all"] = bench_util.peak_summary(peak, peak_after)
        summary.append(s)
        print("geomean " + json.dumps(s), flush=True)
    bench_util.write_tables(rows, args.out, args.stem, summary)


if __name__ == "__main__":
    main()
