"""Two tensorsched builds on the same models, end to end: `run --iters N --json` of each,
alternated over rounds, so host drift falls on both alike. Prints per model and thread count the
median of the rounds' medians and the fastest run of each build, and old / new. Used to check a
default-rule change (copy the old binary aside before rebuilding), e.g.

  cp build/tensorsched /tmp/ts_old && <change, rebuild> &&
  /usr/bin/python3 bench/ab_binaries.py --old /tmp/ts_old --models vgg16,googlenet --threads 2,1

Each binary compiles into its own code cache first (one warm-up run), outside the timing."""
import argparse
import json
import os
import statistics
import subprocess

from bench_util import REPO, write_tables


def model_path(name, zoos):
    for zoo in zoos:
        path = os.path.join(zoo, name, "model.onnx")
        if os.path.exists(path):
            return path
    raise SystemExit(f"ab_binaries: no {name}/model.onnx under {', '.join(zoos)}")


def run_ms(binary, model, threads, iters):
    """(median, min) latency in ms of one `run` of `binary`."""
    out = subprocess.run([binary, "run", model, "--threads", str(threads), "--iters", str(iters), "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"ab_binaries: {binary} run {model} failed: {out.stderr.strip()[-500:]}")
    latency = json.loads(out.stdout)["latency_ms"]
    return latency["median"], latency["min"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="the binary before the change")
    ap.add_argument("--new", default=os.path.join(REPO, "build", "tensorsched"))
    ap.add_argument("--models", required=True)
    ap.add_argument("--zoo", default=",".join(os.path.join(REPO, "build", z) for z in ("zoo", "held_out")))
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out", help="write ab_binaries.{csv,md} here")
    args = ap.parse_args()
    binaries = {"old": args.old, "new": args.new}
    rows = []
    for name in args.models.split(","):
        model = model_path(name, args.zoo.split(","))
        for threads in (int(t) for t in args.threads.split(",")):
            for binary in binaries.values():
                run_ms(binary, model, threads, 1)
            runs = {k: [] for k in binaries}
            for _ in range(args.rounds):
                for k, binary in binaries.items():
                    runs[k].append(run_ms(binary, model, threads, args.iters))
            med = {k: statistics.median(r[0] for r in v) for k, v in runs.items()}
            low = {k: min(r[1] for r in v) for k, v in runs.items()}
            row = {"model": name, "threads": threads, "old_ms": round(med["old"], 3), "new_ms": round(med["new"], 3),
                   "old_over_new": round(med["old"] / med["new"], 3), "old_min_ms": round(low["old"], 3),
                   "new_min_ms": round(low["new"], 3), "old_over_new_min": round(low["old"] / low["new"], 3)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out:
        write_tables(rows, args.out, "ab_binaries")


if __name__ == "__main__":
    main()
