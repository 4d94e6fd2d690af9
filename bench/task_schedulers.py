#!/usr/bin/python3
"""Task-scheduler experiment (DynaTune's Fig. 7-8): model latency against tuning time
for each task scheduler, with the same search policy and the same budget.

For each model, scheduler and seed: `tensorsched tune MODEL --time B --scheduler S --seed K
--e2e-iters 0 --json`, each run with its own fresh records database and code cache (a shared cache
would let later runs skip compiles). The tuner prints the estimated model latency (sum over tasks
of count x best median) after the defaults and after every slot, with its time since the start;
from those curves:

  final          the latency at the end of the budget
  t(seq)         the first time the curve reaches the sequential scheduler's final speed-up over the
                 default (same seed; each run's own default, as defaults are re-measured with noise);
                 "-" when it never gets there
  t(1.2x)/t(1.5x) the first time it is 1.2x / 1.5x below the default latency
  sched %        the scheduler's own time (choosing and observing) as a share of the run

and the speed-ups seq / S of those times; then per model and scheduler over the seeds, the mean of those
times with a target never reached counted as the whole budget (so such means are lower bounds, marked
"+"), and DynaTune's ratios against sequential, round-robin and gradient. Writes OUT/STEM.json,
OUT/STEM.md and OUT/STEM.png (speed-up over the default against time, mean over seeds). `--keep`
loads the runs of an earlier OUT/STEM.json first and runs only what it lacks, so seeds can be added
in separate runs.
Run nothing else meanwhile: 2 shared cores are noisy.

  /usr/bin/python3 bench/task_schedulers.py [--models resnet18,squeezenet1_0,mobilenet_v2,transformer]
      [--schedulers sequential,round-robin,linear,gradient,dynatune] [--seeds 1,2,3] [--time 120] [--keep]
      [--policy random] [--out docs/bench] [--stem task_schedulers]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import add_output_args, repo_relative  # noqa: E402


def tune(binary, model, scheduler, seed, seconds, policy):
    with tempfile.TemporaryDirectory(prefix="ts_sched_") as tmp:
        cmd = [binary, "tune", model, "--db", os.path.join(tmp, "r.db"), "--time", str(seconds), "--scheduler",
               scheduler, "--seed", str(seed), "--policy", policy, "--e2e-iters", "0", "--network-evals", "0", "--json", "-q",
               "--cache-dir", os.path.join(tmp, "cache")]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return json.loads(out[out.index("{"):])


def first_time_below(curve, target):
    for t, ms in curve:
        if ms <= target * (1 + 1e-9):
            return t
    return None


def fmt_t(t):
    return "-" if t is None else f"{t:.0f}"


def ratio(a, b):
    return "-" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def analyse(runs, schedulers):
    """Per (model, seed) the times to targets, relative to sequential."""
    rows = []
    for (model, seed), by_sched in sorted(runs.items()):
        # Defaults are re-measured in every run and differ by noise: targets are speed-ups over each
        # run's own default, the sequential scheduler's final speed-up first.
        seq = by_sched.get("sequential")
        seq_speedup = seq["curve"][0][1] / seq["curve"][-1][1] if seq else None
        for s in schedulers:
            r = by_sched.get(s)
            if not r:
                continue
            curve = r["curve"]
            default = curve[0][1]
            row = {"model": model, "seed": seed, "scheduler": s, "default_ms": default, "final_ms": curve[-1][1],
                   "speedup": default / curve[-1][1],
                   "t_seq": first_time_below(curve, default / seq_speedup) if seq_speedup else None,
                   "t_12": first_time_below(curve, default / 1.2), "t_15": first_time_below(curve, default / 1.5),
                   "sched_share": r["scheduler_seconds"] / max(r["seconds"], 1e-9), "slots": len(curve) - 1}
            rows.append(row)
    return rows


def seed_means(rows, budget):
    """Per (model, scheduler): mean over seeds of each time-to-target, a miss counted as the budget."""
    out = {}
    for r in rows:
        out.setdefault((r["model"], r["scheduler"]), []).append(r)
    means = {}
    for key, rs in out.items():
        m = {"seeds": len(rs), "speedup": sum(r["speedup"] for r in rs) / len(rs),
             "sched_share": max(r["sched_share"] for r in rs)}
        for t in ("t_seq", "t_12", "t_15"):
            hits = [r[t] for r in rs if r[t] is not None]
            m[t] = sum(hits + [budget] * (len(rs) - len(hits))) / len(rs)
            m[t + "_hits"] = len(hits)
        means[key] = m
    return means


def fmt_mean(m, t):
    return f"{m[t]:.0f}" + ("" if m[t + "_hits"] == m["seeds"] else f"+ ({m[t + '_hits']}/{m['seeds']})")


def markdown(rows, args, budget):
    lines = [f"Budget {budget:.0f} s per run, policy {args.policy}; times in seconds since the start of `tune` "
             "(the defaults' measurement included).", "",
             "| model | seed | scheduler | default ms | final ms | speed-up | t(seq final) | seq/this | t(1.2x) | t(1.5x) | "
             "slots | sched % |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seq_t = {(r["model"], r["seed"]): r["t_seq"] for r in rows if r["scheduler"] == "sequential"}
    for r in rows:
        lines.append(f"| {r['model']} | {r['seed']} | {r['scheduler']} | {r['default_ms']:.2f} | {r['final_ms']:.2f} | "
                     f"{r['speedup']:.3f} | "
                     f"{fmt_t(r['t_seq'])} | {ratio(seq_t.get((r['model'], r['seed'])), r['t_seq'])} | "
                     f"{fmt_t(r['t_12'])} | {fmt_t(r['t_15'])} | {r['slots']} | {100 * r['sched_share']:.2f} |")
    means = seed_means(rows, budget)
    lines += ["", "Means over seeds (a target not reached counts as the budget: \"+\" marks a lower bound, with the "
              "seeds that reached it); DynaTune's ratios are other / dynatune of the mean t(seq final).", "",
              "| model | scheduler | seeds | mean speed-up | t(seq final) | t(1.2x) | t(1.5x) | max sched % | "
              "dynatune sooner by |", "|---|---|---|---|---|---|---|---|---|"]
    for (model, sched), m in sorted(means.items()):
        d = means.get((model, "dynatune"))
        sooner = "-" if sched == "dynatune" or not d else f"{m['t_seq'] / d['t_seq']:.2f}"
        lines.append(f"| {model} | {sched} | {m['seeds']} | {m['speedup']:.3f} | {fmt_mean(m, 't_seq')} | "
                     f"{fmt_mean(m, 't_12')} | {fmt_mean(m, 't_15')} | {100 * m['sched_share']:.2f} | {sooner} |")
    return "\n".join(lines) + "\n"


def mean_speedup_curve(curves, grid):
    """Speed-up over each run's own default on a common time grid, averaged over the runs."""
    ys = []
    for c in curves:
        default, k, y = c[0][1], 0, []
        for t in grid:
            while k + 1 < len(c) and c[k + 1][0] <= t:
                k += 1
            y.append(default / c[k][1] if c[0][0] <= t else float("nan"))
        ys.append(y)
    return [sum(v) / len(v) for v in zip(*ys)]


def plot(runs, schedulers, budget, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = sorted({m for m, _ in runs})
    fig, axes = plt.subplots(1, len(models), figsize=(4.5 * len(models), 3.6), squeeze=False)
    grid = [budget * i / 200 for i in range(201)]
    for ax, model in zip(axes[0], models):
        seeds = sorted(k for m, k in runs if m == model)
        for s in schedulers:
            curves = [runs[(model, k)][s]["curve"] for k in seeds if s in runs[(model, k)]]
            if curves:
                ax.plot(grid, mean_speedup_curve(curves, grid), label=s, drawstyle="steps-post")
        ax.set_title(f"{model} ({len(seeds)} seeds)")
        ax.set_xlabel("tuning time (s)")
        ax.set_ylabel("speed-up over the default (mean)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def load_runs(path):
    """The runs of an earlier OUT/STEM.json: {(model, seed): {scheduler: run}}."""
    with open(path) as f:
        saved = json.load(f)
    runs = {}
    if "runs" in saved:
        for key, r in saved["runs"].items():
            model, seed, sched = key.split("/")
            runs.setdefault((model, int(seed)), {})[sched] = r
        return runs
    # The first format kept curves and rows only; rebuild the scheduler's seconds from the rows.
    share = {(r["model"], r["seed"], r["scheduler"]): r["sched_share"] for r in saved["rows"]}
    for key, curve in saved["curves"].items():
        model, seed, sched = key.split("/")
        seconds = curve[-1][0]
        runs.setdefault((model, int(seed)), {})[sched] = {
            "curve": curve, "seconds": seconds, "scheduler_seconds": share[(model, int(seed), sched)] * seconds}
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "tensorsched"))
    ap.add_argument("--zoo", default=os.path.join(REPO, "build", "zoo"))
    ap.add_argument("--models", default="resnet18,squeezenet1_0,mobilenet_v2,transformer")
    ap.add_argument("--schedulers", default="sequential,round-robin,linear,gradient,dynatune")
    ap.add_argument("--seeds", default="1,2,3", help="comma-separated seeds to run")
    ap.add_argument("--time", type=float, default=120)
    ap.add_argument("--policy", default="random")
    add_output_args(ap, "task_schedulers")
    ap.add_argument("--keep", action="store_true", help="add to the runs of an earlier OUT/STEM.json")
    args = ap.parse_args()
    schedulers = args.schedulers.split(",")
    json_path = os.path.join(args.out, args.stem + ".json")
    runs = load_runs(json_path) if args.keep and os.path.exists(json_path) else {}
    for model in args.models.split(","):
        path = os.path.join(args.zoo, model, "model.onnx")
        for seed in [int(k) for k in args.seeds.split(",") if k]:
            for s in schedulers:
                if s in runs.get((model, seed), {}):
                    continue  # --keep: measured in an earlier run
                r = tune(args.binary, path, s, seed, args.time, args.policy)
                runs.setdefault((model, seed), {})[s] = {k: r[k] for k in ("curve", "seconds", "scheduler_seconds")}
                print(f"{model} seed {seed} {s}: {r['curve'][0][1]:.2f} -> {r['curve'][-1][1]:.2f} ms in "
                      f"{r['seconds']:.0f} s, {len(r['curve']) - 1} slots", flush=True)
                save(runs, schedulers, args, json_path)
    print(save(runs, schedulers, args, json_path))


def save(runs, schedulers, args, json_path):
    rows = analyse(runs, schedulers)
    os.makedirs(args.out, exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(repo_relative({"args": vars(args), "rows": rows,
                                "runs": {f"{m}/{k}/{s}": r for (m, k), d in sorted(runs.items()) for s, r in d.items()}}),
                  f, indent=1)
    md = markdown(rows, args, args.time)
    with open(os.path.join(args.out, args.stem + ".md"), "w") as f:
        f.write(md)
    plot(runs, schedulers, args.time, os.path.join(args.out, args.stem + ".png"))
    return md


if __name__ == "__main__":
    main()
