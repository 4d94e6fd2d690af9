"""Two tensorsched builds on the same models, end to end: `run --iters N --json` of each,
alternated over rounds, so host drift falls on both alike. Prints per model and thread count the
median of the rounds' medians and the fastest run of each build, and old / new. Used to check a
default-rule change (copy the old binary aside before rebuilding), e.g.

  cp build/tensorsched /tmp/ts_old && <change, rebuild> &&
  /usr/bin/python3 bench/ab_binaries.py --old /tmp/ts_old --models vgg16,googlenet --threads 2,1 --steps

Each binary compiles into its own fresh code cache first (one warm-up run, outside the timing;
TENSORSCHED_CACHE_DIR is set per build, so a wrapper script that sets it itself defeats --steps'
split below).

--steps adds `--profile` to every run and compares the steps: per workload the fastest round of
its steps (summed per inference), its "floor". Interference only ever adds time, but on this
project's shared host a whole phase can still slow one build's rounds by 5-10% on every step. So
the workloads are split by whether the change touched their code (the two caches' object files
differ): the untouched steps' old / new floor ratio is the phase, and the touched steps' ratio
divided by it ("changed_vs_control") is the change's own effect. (With every workload touched
there is no control, and the touched steps read as they are.) Touched workloads whose floors
differ by --step-diff or more are listed (--out: ab_binaries_steps.{csv,md})."""
import argparse
import glob
import hashlib
import json
import os
import statistics
import subprocess
import tempfile

from bench_util import REPO, write_tables


def model_path(name, zoos):
    for zoo in zoos:
        path = os.path.join(zoo, name, "model.onnx")
        if os.path.exists(path):
            return path
    raise SystemExit(f"ab_binaries: no {name}/model.onnx under {', '.join(zoos)}")


def run_ms(binary, cache, model, threads, iters, profile=False):
    """(median, min, {workload key: (name, its steps' ms per inference)}) of one `run` of `binary`
    with code cache `cache`; the dict is empty without `profile`."""
    cmd = [binary, "-q", "run", model, "--threads", str(threads), "--iters", str(iters), "--json"]
    env = dict(os.environ, TENSORSCHED_CACHE_DIR=cache)
    out = subprocess.run(cmd + (["--profile"] if profile else []), capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"ab_binaries: {binary} run {model} failed: {out.stderr.strip()[-500:]}")
    result = json.loads(out.stdout)
    steps = {}
    for p in result.get("profile", []):
        name, ms = steps.get(p["key"], (p["name"], 0.0))
        steps[p["key"]] = (name, ms + p["ms"])
    latency = result["latency_ms"]
    return latency["median"], latency["min"], steps


def step_floors(runs):
    """Per workload key: (name, fastest round of its steps' ms)."""
    floors = {}
    for _, _, steps in runs:
        for key, (name, ms) in steps.items():
            floors[key] = (name, min(ms, floors.get(key, (name, ms))[1]))
    return floors


def code_digest(cache, key):
    """A digest of the default-schedule code a cache holds for workload `key` (its object files)."""
    h = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(cache, "*", "*", f"ts_{key}_*.o"))):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def compare_steps(name, threads, runs, caches, min_diff):
    """The model's step columns (all steps, touched and untouched ones, and the touched ones over
    the untouched ones' phase), and the rows of touched workloads whose floors differ by min_diff."""
    old, new = step_floors(runs["old"]), step_floors(runs["new"])
    if set(old) != set(new):
        raise SystemExit(f"ab_binaries: {name}: the two builds partition the model differently; "
                         "--steps compares the same workloads")
    touched = {k for k in old if code_digest(caches["old"], k) != code_digest(caches["new"], k)}

    def ratio(keys):
        o, n = sum(old[k][1] for k in keys), sum(new[k][1] for k in keys)
        return o, n, (o / n if n > 0 else float("nan"))

    all_o, all_n, all_r = ratio(old)
    ch_o, ch_n, ch_r = ratio(touched)
    # With every step touched there is no control: the touched steps are compared as they read.
    control = ratio(set(old) - touched)[2] if touched != set(old) else None
    phase = control or 1.0
    cols = {"old_step_floor_ms": round(all_o, 3), "new_step_floor_ms": round(all_n, 3),
            "old_over_new_steps": round(all_r, 3), "changed_steps": f"{len(touched)}/{len(old)}",
            "changed_old_ms": round(ch_o, 3), "changed_new_ms": round(ch_n, 3),
            "control_old_over_new": None if control is None else round(control, 3),
            "changed_vs_control": round(ch_r / phase, 3) if touched else None}
    moved = []
    for key in sorted(touched, key=lambda k: -old[k][1]):
        r = old[key][1] / max(new[key][1], 1e-9)
        if abs(r / phase - 1) >= min_diff:
            moved.append({"model": name, "threads": threads, "key": key, "name": old[key][0],
                          "old_ms": round(old[key][1], 4), "new_ms": round(new[key][1], 4),
                          "old_over_new": round(r, 3), "vs_control": round(r / phase, 3)})
    return cols, moved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="the binary before the change")
    ap.add_argument("--new", default=os.path.join(REPO, "build", "tensorsched"))
    ap.add_argument("--models", required=True)
    ap.add_argument("--zoo", default=",".join(os.path.join(REPO, "build", z) for z in ("zoo", "held_out")))
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--steps", action="store_true", help="time every step too (run --profile), compare step floors")
    ap.add_argument("--step-diff", type=float, default=0.05,
                    help="with --steps: list touched workloads whose floors differ this much from the control's ratio")
    ap.add_argument("--out", help="write ab_binaries.{csv,md} here")
    args = ap.parse_args()
    binaries = {"old": args.old, "new": args.new}
    rows, step_rows = [], []
    with tempfile.TemporaryDirectory(prefix="ts_ab_") as tmp:
        caches = {k: os.path.join(tmp, k) for k in binaries}
        for name in args.models.split(","):
            model = model_path(name, args.zoo.split(","))
            for threads in (int(t) for t in args.threads.split(",")):
                for k, binary in binaries.items():
                    run_ms(binary, caches[k], model, threads, 1)
                runs = {k: [] for k in binaries}
                for _ in range(args.rounds):
                    for k, binary in binaries.items():
                        runs[k].append(run_ms(binary, caches[k], model, threads, args.iters, args.steps))
                med = {k: statistics.median(r[0] for r in v) for k, v in runs.items()}
                low = {k: min(r[1] for r in v) for k, v in runs.items()}
                row = {"model": name, "threads": threads, "old_ms": round(med["old"], 3), "new_ms": round(med["new"], 3),
                       "old_over_new": round(med["old"] / med["new"], 3), "old_min_ms": round(low["old"], 3),
                       "new_min_ms": round(low["new"], 3), "old_over_new_min": round(low["old"] / low["new"], 3)}
                if args.steps:
                    cols, moved = compare_steps(name, threads, runs, caches, args.step_diff)
                    row.update(cols)
                    step_rows += moved
                    for m in moved:
                        print("  " + json.dumps(m), flush=True)
                print(json.dumps(row), flush=True)
                rows.append(row)
    if args.out:
        write_tables(rows, args.out, "ab_binaries")
        if step_rows:
            write_tables(step_rows, args.out, "ab_binaries_steps")


if __name__ == "__main__":
    main()
