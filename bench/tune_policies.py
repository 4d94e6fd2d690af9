#!/usr/bin/python3
"""Tuning benchmark: end-to-end latency after tuning with each search policy, against the
default schedule and PyTorch (TorchScript), measured in one run.

For each model: `tensorsched tune` once per policy, each into its own records database (random
search and gbt-sa with --trials per task; Halide's autoschedulers adams2019 / adams2019-greedy with
--halide-trials proposals per task, li2018 / mullapudi2016 with their one deterministic
schedule), or, with --time S, every policy with the same wall-time budget. Then the comparison, in rounds that alternate the versions so that drift hits all of
them alike: `tensorsched run` with the default schedules, with each policy's database
(`run --db`), and TorchScript (trace + freeze + optimize_for_inference) of the same network.
The latency of a version is the minimum over rounds of its median over --iters runs.
Ratios: default / version (above 1: faster than the default) and TorchScript / version (above
1: faster than PyTorch). Run nothing else meanwhile: 2 shared cores are noisy.

  /usr/bin/python3 bench/tune_policies.py [--models resnet18,mobilenet_v2,squeezenet1_0]
      [--policies random,adams2019,adams2019-greedy,li2018,mullapudi2016] [--trials 20]
      [--halide-trials 20] [--time S] [--stem tune_policies] [--iters 20] [--rounds 3] [--out docs/bench]
"""
import argparse
import json
import os
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


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,mobilenet_v2,squeezenet1_0")
    ap.add_argument("--policies", default="random,adams2019,adams2019-greedy,li2018,mullapudi2016")
    ap.add_argument("--trials", type=int, default=20, help="random search: measured schedules per task")
    ap.add_argument("--halide-trials", type=int, default=20, help="adams2019(-greedy): proposals per task")
    ap.add_argument("--time", type=float, default=0,
                    help="a fixed budget: every policy tunes for this many seconds (--time) instead of trials")
    bench_util.add_output_args(ap, "tune_policies")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "tensorsched"))
    ap.add_argument("--work", default=None, help="directory for databases and code (default: a temp dir)")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="tensorsched-tune-bench-")
    os.makedirs(work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    cache = os.path.join(work, "cache")
    bench_util.set_torch_threads(os.cpu_count())
    rows = []
    for name in args.models.split(","):
        model = os.path.join(REPO, "models", name + ".onnx")
        tuned = {}
        for policy in args.policies.split(","):
            db = os.path.join(work, f"{name}-{policy}.db")
            trials = args.trials if policy in ("random", "gbt-sa") else args.halide_trials
            budget = ["--time", str(args.time)] if args.time > 0 else ["--trials", str(trials)]
            t0 = time.time()
            # --network-evals 0: the policies' own finds, compared under the same budget.
            j = run_json([args.binary, "tune", model, "--db", db, "--policy", policy, "--e2e-iters", "0",
                          "--network-evals", "0", "--cache-dir", cache, "--json"] + budget)
            tuned[policy] = {"db": db, "tune_s": time.time() - t0, "measured": j["measured_now"],
                             "beat_default": j["tuned_workloads"], "tasks": len(j["tasks"])}
            print(f"{name} {policy}: tuned in {tuned[policy]['tune_s']:.0f} s, {j['measured_now']} measured, "
                  f"{j['tuned_workloads']}/{len(j['tasks'])} workloads beat the default", flush=True)
        net, script, x = bench_util.torch_models(export_models, name)
        versions = ["default"] + list(tuned)
        best = {v: float("inf") for v in versions + ["torchscript"]}
        for _ in range(args.rounds):
            for v in versions:
                cmd = [args.binary, "run", model, "--json", "--iters", str(args.iters), "--cache-dir", cache]
                if v != "default":
                    cmd += ["--db", tuned[v]["db"]]
                best[v] = min(best[v], run_json(cmd)["latency_ms"]["median"])
            best["torchscript"] = min(best["torchscript"], bench_util.torch_median_ms(script, x, args.iters))
        for v in versions:
            row = {"model": name, "version": v, "latency_ms": round(best[v], 3),
                   "default_over_version": round(best["default"] / best[v], 3),
                   "torchscript_over_version": round(best["torchscript"] / best[v], 3),
                   "torchscript_ms": round(best["torchscript"], 3),
                   "tune_s": round(tuned[v]["tune_s"], 1) if v in tuned else 0,
                   "measured": tuned[v]["measured"] if v in tuned else 0,
                   "workloads_beating_default": f"{tuned[v]['beat_default']}/{tuned[v]['tasks']}" if v in tuned else ""}
            rows.append(row)
            print(json.dumps(row), flush=True)
    bench_util.write_tables(rows, args.out, args.stem)
    print(f"work dir {work}")


if __name__ == "__main__":
    main()
