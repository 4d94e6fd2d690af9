#!/usr/bin/python3
"""Tuning-reuse experiment (Gibson and Cano's Fig. 5-6): a model starts from the
schedules other models earned, against tuning it from scratch for the same time.

1. Donors: every model is tuned from scratch for --donor-time seconds (random search) into its own
   records database, WORK/donors/MODEL.db (kept between runs: an existing one is reused). Or
   --donor-dbs names databases tuned beforehand (e.g. the zoo's, by `tune --time 600`): every
   target then reuses all of them (a model is never its own donor), and targets may be models no
   database holds (held-out networks).
2. Reuse: each model in turn is the target, with every *other* model's database as a donor
   (`tensorsched tune MODEL --reuse-from ... --donor auto --full-evals N --json`), a fresh records
   database and a fresh code cache (its compiles count). From the run's JSON: the untuned model's
   latency, the best latency after 0, 5, 10 and 20 full evaluations and the seconds each took
   since the start (the standalone phase included), and the donor the heuristic picked.
   With --same-class-too, reuse runs again with --same-class-only (no across-class knob recipes).
   At its end reuse times the default model against the model `run --db` then runs (its
   confirmed choices), alternately, as `tune` ends a search: its "speedup".
3. From scratch: the same target tuned from zero for the seconds the whole reuse run took, with
   each --scratch policy, a fresh database and cache (`tune --time S --json`): its end-to-end
   speed-up over the default as `tune` measures it (default and tuned models timed alternately in
   one process), against reuse's own.

Speed-ups are untuned / tuned from the same run. Writes OUT/STEM.json, OUT/STEM.md and
OUT/STEM.png (speed-up against full evaluations per model; reuse and scratch at equal time).
Run nothing else meanwhile: 2 shared cores are noisy.

  /usr/bin/python3 bench/tuning_reuse.py [--models resnet18,resnet50,...] [--donor-time 120]
      [--donor-dbs A.db,B.db,...] [--full-evals 20] [--scratch random,gbt-sa] [--work build/reuse]
      [--same-class-too] [--keep] [--out docs/bench]
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
PAPER_MODELS = ("resnet18,resnet50,alexnet,vgg16,mobilenet_v2,efficientnet_b0,efficientnet_b4,googlenet,"
                "mnasnet1_0")
CHECKPOINTS = (0, 5, 10, 20)


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout[p.stdout.index("{"):])


def model_path(zoo, model):
    return os.path.join(zoo, model, "model.onnx")


def tune_donor(args, model):
    db = os.path.join(args.work, "donors", model + ".db")
    if os.path.exists(db):
        return db
    os.makedirs(os.path.dirname(db), exist_ok=True)
    tmp = db + ".partial"
    if os.path.exists(tmp):
        os.remove(tmp)
    with tempfile.TemporaryDirectory(prefix="ts_reuse_") as cache:
        r = run_json([args.binary, "tune", model_path(args.zoo, model), "--db", tmp, "--time", str(args.donor_time),
                      "--policy", "random", "--e2e-iters", "0", "--network-evals", "0", "--json", "-q", "--cache-dir", cache])
    os.replace(tmp, db)
    print(f"donor {model}: {r['tuned_workloads']} workloads tuned in {r['seconds']:.0f} s", flush=True)
    return db


def at_checkpoints(reuse):
    """{k: (speed-up, seconds)} after k full evaluations (the last one where fewer were made).

    The speed-up is the default model's time over the best model's, both from the rounds of that
    evaluation (timed alternately): whole-model times drift by 10-20% between evaluations here,
    more than most changes are worth, so a ratio across evaluations would mostly measure drift."""
    evals = reuse["evaluations"]
    out = {}
    for k in CHECKPOINTS:
        if not evals:
            break
        e = evals[min(k, len(evals) - 1)]
        out[k] = (speedup_of(e), e["seconds"])
    return out


def speedup_of(evaluation):
    return evaluation["default_ms"] / evaluation["best_ms"]


def reuse_target(args, model, donors, same_class_only=False):
    with tempfile.TemporaryDirectory(prefix="ts_reuse_") as tmp:
        r = run_json([args.binary, "tune", model_path(args.zoo, model), "--db", os.path.join(tmp, "r.db"),
                      "--reuse-from", ",".join(donors), "--donor", args.donor, "--full-evals", str(args.full_evals),
                      "--json", "-q", "--cache-dir", os.path.join(tmp, "cache")]
                     + (["--same-class-only"] if same_class_only else []))
    chosen = [d["model"] for d in r["donors"] if d["chosen"]]
    cp = at_checkpoints(r)
    print(f"reuse{' (same class only)' if same_class_only else ''} {model} from {','.join(chosen) or 'nothing'}: "
          + ", ".join(f"{k} evals {s:.3f}x at {t:.0f} s" for k, (s, t) in cp.items()), flush=True)
    return r


def scratch_target(args, model, policy, seconds):
    with tempfile.TemporaryDirectory(prefix="ts_scratch_") as tmp:
        r = run_json([args.binary, "tune", model_path(args.zoo, model), "--db", os.path.join(tmp, "r.db"),
                      "--time", str(max(10, round(seconds))), "--policy", policy, "--network-evals", "0", "--json", "-q",
                      "--cache-dir", os.path.join(tmp, "cache")])
    print(f"scratch {model} {policy} {seconds:.0f} s: {r['speedup']:.3f}x", flush=True)
    return {k: r[k] for k in ("speedup", "e2e_default_ms", "e2e_tuned_ms", "seconds", "tuned_workloads")}


def steps_saved_cell(reuse):
    """What the kept changes saved in the steps they changed, timed in the model (the best model's
    steps before each change against the trial's, the same rounds): unlike a whole-model ratio, it
    carries no other step's noise."""
    saved = sum(e["best_steps_ms"] - e["steps_ms"] for e in reuse["evaluations"] if e["kept"])
    return f"{saved:.2f} ms ({100 * saved / reuse['default_ms']:.1f}%)"


def run_db_cell(reuse):
    if not reuse.get("speedup"):
        return "-"
    confirmed = sum(1 for w in reuse["workloads"] if w.get("confirmed"))
    return f"{reuse['speedup']:.3f}x ({reuse['seconds']:.0f} s, {confirmed} confirmed)"


def rows_of(results, scratch):
    rows = []
    for model, r in results.items():
        cp = at_checkpoints(r["reuse"])
        row = {"model": model, "donor": ",".join(d["model"] for d in r["reuse"]["donors"] if d["chosen"]) or "-",
               "default_ms": round(r["reuse"]["default_ms"], 3),
               "standalone_s": round(r["reuse"]["standalone_seconds"], 1)}
        for k in CHECKPOINTS:
            s, t = cp.get(k, (None, None))
            row[f"reuse_{k}"] = "-" if s is None else f"{s:.3f}x ({t:.0f} s)"
        row["across_class"] = sum(w.get("across_class", 0) for w in r["reuse"]["workloads"])
        row["steps_saved"] = steps_saved_cell(r["reuse"])
        row["reuse_run_db"] = run_db_cell(r["reuse"])
        if "reuse_same_class" in r:
            row["same_class_only_run_db"] = run_db_cell(r["reuse_same_class"])
        for p in scratch:
            s = r.get("scratch", {}).get(p)
            row[f"{p}_same_time"] = ("-" if s is None else
                                     f"{s['speedup']:.3f}x ({s['seconds']:.0f} s, {s['tuned_workloads']} tuned)")
        rows.append(row)
    return rows


def markdown(rows, args):
    cols = list(dict.fromkeys(c for r in rows for c in r))  # a --keep run's rows may lack later columns
    donors = (f"Donors: {', '.join(os.path.basename(d) for d in args.donor_db_list)} (tuned beforehand)"
              if args.donor_db_list else f"Donors tuned {args.donor_time:.0f} s each (random)")
    lines = [f"{donors}; reuse: every other model's database as a donor, "
             f"--donor {args.donor}, up to {args.full_evals} full evaluations; speed-ups are untuned / best model "
             "latency of the same evaluation's rounds, with the seconds since the start of the run; reuse_run_db: "
             "the default model against what `run --db` runs after reuse, timed alternately at its end (the whole "
             "run's seconds). From scratch: the same target tuned for the seconds the whole reuse run took, its "
             "end-to-end speed-up measured the same way. \"N confirmed\" / \"N tuned\": workloads that run a "
             "schedule other than the default's; where N is 0 the cell times the default model against itself, "
             "so it shows the host's noise on a whole-model ratio. steps_saved: what the kept changes saved "
             "in the steps they changed, timed in the model, and its share of the default model's time.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "-")) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def plot(results, scratch, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for model, r in results.items():
        evals = r["reuse"]["evaluations"]
        axes[0].plot([e["index"] for e in evals], [speedup_of(e) for e in evals],
                     marker=".", label=model)
    axes[0].set_xlabel("full evaluations")
    axes[0].set_ylabel("speed-up over the untuned model")
    axes[0].set_title("tuning reuse")
    axes[0].legend(fontsize=8)
    models = list(results)
    width = 0.8 / (1 + len(scratch))
    cp = [results[m]["reuse"].get("speedup", 0) for m in models]
    axes[1].bar([i for i in range(len(models))], cp, width, label="reuse, as run --db runs it")
    for j, p in enumerate(scratch):
        vals = [results[m].get("scratch", {}).get(p, {}).get("speedup", 0) for m in models]
        axes[1].bar([i + (j + 1) * width for i in range(len(models))], vals, width, label=f"{p} from scratch")
    axes[1].set_xticks([i + width * len(scratch) / 2 for i in range(len(models))])
    axes[1].set_xticklabels(models, rotation=30, fontsize=8)
    axes[1].axhline(1.0, color="gray", lw=0.5)
    axes[1].set_ylabel("speed-up over the untuned model")
    axes[1].set_title("same time")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def save(results, args):
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, args.stem)
    with open(stem + ".json", "w") as f:
        json.dump(repo_relative({"args": vars(args), "results": results}), f, indent=1)
    md = markdown(rows_of(results, args.scratch_list), args)
    with open(stem + ".md", "w") as f:
        f.write(md)
    plot(results, args.scratch_list, stem + ".png")
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "tensorsched"))
    ap.add_argument("--zoo", default=os.path.join(REPO, "build", "zoo"))
    ap.add_argument("--models", default=PAPER_MODELS)
    ap.add_argument("--donor-time", type=float, default=120, help="seconds of from-scratch tuning per donor")
    ap.add_argument("--donor-dbs", default="", help="comma-separated databases tuned beforehand: no donor is tuned")
    ap.add_argument("--donor", default="auto", help="auto (the heuristic's best), all, or a model")
    ap.add_argument("--full-evals", type=int, default=20)
    ap.add_argument("--scratch", default="random", help="comma-separated policies tuned from scratch")
    ap.add_argument("--work", default=os.path.join(REPO, "build", "reuse"), help="donor databases live here")
    add_output_args(ap, "tuning_reuse")
    ap.add_argument("--same-class-too", action="store_true",
                    help="also reuse with --same-class-only (no across-class recipes), for comparison")
    ap.add_argument("--keep", action="store_true", help="keep the targets of an earlier OUT/STEM.json")
    args = ap.parse_args()
    args.scratch_list = [p for p in args.scratch.split(",") if p]
    args.donor_db_list = [os.path.abspath(d) for d in args.donor_dbs.split(",") if d]
    models = [m for m in args.models.split(",") if m]
    missing = [m for m in models if not os.path.exists(model_path(args.zoo, m))]
    if missing:
        subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tools", "export_models.py"), "--out", args.zoo,
                        "--graph-only-dir", os.path.join(args.zoo, "graph-only"), "--models", ",".join(missing)],
                       check=True)
    if args.donor_db_list:
        donors = {os.path.splitext(os.path.basename(d))[0]: d for d in args.donor_db_list}
    else:
        donors = {m: tune_donor(args, m) for m in models}
    json_path = os.path.join(args.out, args.stem + ".json")
    results = {}
    if args.keep and os.path.exists(json_path):
        with open(json_path) as f:
            results = json.load(f)["results"]
    for model in models:
        r = results.setdefault(model, {})
        others = [db for m, db in donors.items() if m != model]  # a model is never its own donor
        if "reuse" not in r:
            r["reuse"] = reuse_target(args, model, others)
            save(results, args)
        if args.same_class_too and "reuse_same_class" not in r:
            r["reuse_same_class"] = reuse_target(args, model, others, True)
            save(results, args)
        seconds = r["reuse"]["seconds"]
        for p in args.scratch_list:
            if p not in r.setdefault("scratch", {}):
                r["scratch"][p] = scratch_target(args, model, p, seconds)
                save(results, args)
    print(save(results, args))


if __name__ == "__main__":
    main()
