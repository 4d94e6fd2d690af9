#!/usr/bin/env python3
"""Measured schedules per hour of `tensorsched dataset generate` on random networks.

Runs the command for a fixed wall time on a fresh code cache and database (nothing else may run),
then prints schedules per hour overall and how the records split between anchor workloads (a
conv, matmul or gemm: compiles of seconds) and the rest (elementwise, pooling, data movement).
The target: 3,000 an hour on 2 cores.

usage: bench/dataset_throughput.py [--binary build/tensorsched] [--seconds 300] [--count 40] [--seed 100]
"""
import argparse
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

ANCHORS = ("Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/tensorsched")
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--schedules-per-workload", type=int, default=16)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "throughput.db")
        env = dict(os.environ, TENSORSCHED_CACHE_DIR=os.path.join(work, "cache"))
        out = subprocess.run([a.binary, "dataset", "generate", "--count", str(a.count), "--seed", str(a.seed), "--db", db,
                              "--time", str(a.seconds), "--schedules-per-workload", str(a.schedules_per_workload)],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(out.stdout + out.stderr)
        summary = out.stdout.strip().splitlines()[0]
        m = re.search(r"measured (\d+) schedules in (\d+) s", summary)
        measured, seconds = int(m.group(1)), float(m.group(2))
        con = sqlite3.connect(db)
        rows = con.execute("SELECT w.name, COUNT(*) FROM measurements m JOIN workloads w ON w.exact_key = m.workload_key "
                           "GROUP BY w.name").fetchall()
        con.close()
    anchor = sum(n for name, n in rows if any(op in name.split("+") for op in ANCHORS))
    print(summary)
    rate = 3600 * measured / max(seconds, 1)
    print(f"schedules per hour: {rate:.0f} (target 3000: {rate / 3000:.2f}x); records of anchor workloads "
          f"(conv / matmul / gemm): {anchor} of {measured}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
