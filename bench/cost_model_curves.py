#!/usr/bin/python3
"""Best time found vs measured trials on ResNet-18's conv workloads (the guided-search benchmark).

Three searches in one run, with the same trials per workload:
  random           uniform draws from the schedule space;
  gbt-sa           AutoTVM's loop: XGBoost rank model trained online + simulated annealing;
  gbt-sa-transfer  the same with a global model trained on the *other* workloads' records
                   (random and gbt-sa records of this run: AutoTVM's historical data D'),
                   one tune run per workload so that its own records are never in the source.
Writes docs/bench/cost_model_curves.csv (policy, workload, trial, best_ms), a summary table
(trials to reach 95 % of the best time any search found, per workload and on average) and,
through tools/plot_curves.py, docs/bench/cost_model_curves.png.

  bench/cost_model_curves.py --tensorsched build/tensorsched --trials 40 --workloads 8 --work-dir /tmp/curves
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
POLICIES = ["random", "gbt-sa", "gbt-sa-transfer"]


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout


def conv_workloads(ts, model):
    out = run([ts, "workloads", model, "--json"])
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [r for r in rows if r["name"].startswith("Conv")]


def export(ts, db):
    out = run([ts, "db", "export", "--db", db, "--jsonl", "-"])
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def curves(records, policy, key):
    """Best valid median (ms) after each trial of `policy` on workload `key`, in record order."""
    best, out = float("inf"), []
    for r in records:
        if r["workload"]["key_hash"] != key or r["policy"] != policy:
            continue
        if not r["error_kind"]:
            best = min(best, r["median"] * 1e3)
        out.append(best)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tensorsched", default=os.path.join(ROOT, "build", "tensorsched"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "resnet18.onnx"))
    ap.add_argument("--trials", type=int, default=48, help="measured schedules per workload and search")
    ap.add_argument("--workloads", type=int, default=0, help="first N conv workloads (0 = all)")
    ap.add_argument("--plan-size", type=int, default=16)
    ap.add_argument("--sa-steps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work-dir", default="", help="keep the databases here (default: a temp dir)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "bench"))
    a = ap.parse_args()
    ts = a.tensorsched
    work = a.work_dir or tempfile.mkdtemp(prefix="ts-curves-")
    os.makedirs(work, exist_ok=True)
    convs = conv_workloads(ts, a.model)
    if a.workloads > 0:
        convs = convs[: a.workloads]
    keys = [c["key"] for c in convs]
    names = {c["key"]: c["name"] for c in convs}
    common = ["--trials", str(a.trials), "--seed", str(a.seed), "--e2e-iters", "0", "--network-evals", "0", "--json",
              "--plan-size", str(a.plan_size),
              "--sa-steps", str(a.sa_steps)]
    dbs = {p: os.path.join(work, p + ".db") for p in ["random", "gbt-sa"]}
    for p in ["random", "gbt-sa"]:
        run([ts, "tune", a.model, "--db", dbs[p], "--policy", p, "--workloads", ",".join(keys)] + common)
    source = export(ts, dbs["random"]) + export(ts, dbs["gbt-sa"])
    transfer_records = []
    for k in keys:
        jsonl = os.path.join(work, f"source-{k}.jsonl")
        with open(jsonl, "w") as f:
            for r in source:
                if r["workload"]["key_hash"] != k:
                    f.write(json.dumps(r) + "\n")
        db = os.path.join(work, f"transfer-{k}.db")
        if os.path.exists(db):
            os.remove(db)
        run([ts, "db", "import", "--db", db, "--jsonl", jsonl])
        run([ts, "tune", a.model, "--db", db, "--policy", "gbt-sa", "--transfer", "--workloads", k] + common)
        transfer_records += [r for r in export(ts, db) if r["workload"]["key_hash"] == k]
    records = {"random": export(ts, dbs["random"]), "gbt-sa": export(ts, dbs["gbt-sa"]),
               "gbt-sa-transfer": transfer_records}

    os.makedirs(a.out, exist_ok=True)
    csv_path = os.path.join(a.out, "cost_model_curves.csv")
    summary = []
    with open(csv_path, "w") as f:
        f.write("policy,workload,name,trial,best_ms\n")
        for k in keys:
            c = {p: curves(records[p], p, k) for p in POLICIES}
            best_any = min(min(v) for v in c.values() if v)
            row = {"workload": k, "name": names[k], "best_ms": round(best_any, 3)}
            for p in POLICIES:
                for t, v in enumerate(c[p], 1):
                    f.write(f"{p},{k},{names[k]},{t},{v:.6f}\n")
                reach = next((t for t, v in enumerate(c[p], 1) if v <= best_any / 0.95), None)
                row[f"{p} trials to 95%"] = reach if reach is not None else f">{len(c[p])}"
                row[f"{p} best ms"] = round(min(c[p]), 3) if c[p] else ""
            summary.append(row)
    print("wrote", csv_path)

    per_workload = list(summary)

    def mean_trials(p):
        # Not reached counts as trials + 1 (a lower bound of what it needs).
        vals = [r[f"{p} trials to 95%"] for r in per_workload]
        return sum(v if isinstance(v, int) else a.trials + 1 for v in vals) / len(vals)

    def geomean_ratio(p, t):
        # Geometric mean over workloads of (best after t trials) / (best any search found).
        logs = []
        for k in keys:
            c = curves(records[p], p, k)
            best_any = min(min(curves(records[q], q, k)) for q in POLICIES)
            logs.append(math.log(c[min(t, len(c)) - 1] / best_any))
        return math.exp(sum(logs) / len(logs))

    avg = {"workload": "mean", "name": f"{len(keys)} workloads", "best_ms": ""}
    for p in POLICIES:
        avg[f"{p} trials to 95%"] = round(mean_trials(p), 1)
        avg[f"{p} best ms"] = ""
    summary.append(avg)
    for t in (a.trials // 2, a.trials):
        row = {"workload": f"geomean best/best-any after {t} trials", "name": "", "best_ms": ""}
        for p in POLICIES:
            row[f"{p} trials to 95%"] = ""
            row[f"{p} best ms"] = round(geomean_ratio(p, t), 3)
        summary.append(row)
    sys.path.insert(0, HERE)
    from bench_util import write_tables
    write_tables(summary, a.out, "cost_model_curves_summary")
    r, g, t = (mean_trials(p) for p in POLICIES)
    print(f"mean trials to 95% of the best: random {r:.1f}, gbt-sa {g:.1f}, gbt-sa-transfer {t:.1f}; "
          f"random/gbt-sa {r / g:.2f}x, random/transfer {r / t:.2f}x")
    plot = os.path.join(ROOT, "tools", "plot_curves.py")
    subprocess.run([sys.executable, plot, csv_path, os.path.join(a.out, "cost_model_curves.png")], check=False)


if __name__ == "__main__":
    main()
