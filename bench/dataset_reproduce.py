#!/usr/bin/env python3
"""Measures a sample of a shipped data set's records again and compares the times.

Imports the data set into a fresh database, draws one valid record from each of `--count`
workloads picked at random (seeded), and measures their schedules again with `tensorsched db
measure` (each on its workload's stored subgraph, output checked against the default), then prints
fresh median / shipped median against the shipped record's own spread (its repeats' (max - min) /
median): a data set reproduces on a host when the two differ about as much as one record's
repeats do. Records under `--min-us` run for a few hundred cycles, where a timer tick is the
spread; they are counted apart. Nothing else may run meanwhile.

usage: bench/dataset_reproduce.py [--data datasets/random_s1.jsonl.gz] [--count 60] [--seed 1]
       [--min-us 20] [--code-generator HASH] [--binary build/tensorsched]
"""
import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile


def quantiles(values, qs=(0.1, 0.5, 0.9)):
    v = sorted(values)
    return [v[min(len(v) - 1, int(q * len(v)))] for q in qs]


def pick(db, count, seed, min_us, generator):
    """One valid record per workload, of `count` workloads drawn at random: (id, median, spread)."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT id, workload_key, median, times, machine FROM measurements WHERE error_kind = '' "
                       "AND median > 0 AND policy NOT LIKE '%confirm%' ORDER BY id").fetchall()
    con.close()
    by_workload = {}
    for rid, key, median, times, machine in rows:
        if generator and json.loads(machine).get("code_generator") != generator:
            continue
        t = json.loads(times)
        by_workload.setdefault(key, []).append((rid, median, (max(t) - min(t)) / median))
    rng = random.Random(seed)
    keys = sorted(by_workload)
    rng.shuffle(keys)
    out = []
    for key in keys:
        big = [r for r in by_workload[key] if r[1] * 1e6 >= min_us]
        pool = big or by_workload[key]
        out.append(rng.choice(pool))
        if len(out) == count:
            break
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="datasets/random_s1.jsonl.gz")
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-us", type=float, default=20.0)
    ap.add_argument("--code-generator", default="", help="only records of this code generator hash (`db machines`)")
    ap.add_argument("--binary", default="build/tensorsched")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "shipped.db")
        subprocess.run([a.binary, "dataset", "import", "--db", db, a.data], check=True, capture_output=True)
        chosen = pick(db, a.count, a.seed, a.min_us, a.code_generator)
        if not chosen:
            sys.exit("no record to measure")
        env = dict(os.environ, TENSORSCHED_CACHE_DIR=os.path.join(work, "cache"))
        run = subprocess.run([a.binary, "db", "measure", "--db", db, "--json", "--record", ",".join(str(r[0]) for r in chosen)],
                             env=env, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(run.stdout + run.stderr)
        fresh = {m["id"]: m for m in json.loads(run.stdout)}
    pairs, failed = [], []
    for rid, median, spread in chosen:
        now = fresh[rid]["now"]
        if now["error_kind"]:
            failed.append((rid, fresh[rid]["name"], now["error_kind"]))
        else:
            pairs.append((now["median"], median, spread))
    print(f"{a.data}: {len(chosen)} records of as many workloads measured again; {len(failed)} failed now"
          + "".join(f"\n  record {rid} ({name}): {kind}" for rid, name, kind in failed))
    for label, keep in ((f"median >= {a.min_us:g} us", lambda p: p[1] * 1e6 >= a.min_us),
                        (f"median < {a.min_us:g} us", lambda p: p[1] * 1e6 < a.min_us)):
        sel = [p for p in pairs if keep(p)]
        if not sel:
            print(f"{label}: none")
            continue
        ratios = [f / s for f, s, _ in sel]
        r10, r50, r90 = quantiles(ratios)
        s10, s50, s90 = quantiles([sp for _, _, sp in sel])
        within = sum(1 for f, s, sp in sel if abs(f - s) <= sp * s)
        print(f"{label}: {len(sel)} records; fresh / shipped p10 {r10:.2f} p50 {r50:.2f} p90 {r90:.2f}, geomean "
              f"{statistics.geometric_mean(ratios):.3f}; the shipped repeats' (max - min) / median p10 {s10:.2f} "
              f"p50 {s50:.2f} p90 {s90:.2f}; fresh within the shipped record's spread: {within} ({100 * within / len(sel):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
