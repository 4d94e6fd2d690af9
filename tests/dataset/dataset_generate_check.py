#!/usr/bin/env python3
"""`tensorsched dataset generate` as a user runs it: killed with SIGKILL mid-way and run again,
it loses nothing and measures no schedule twice; under `mpirun -np 2 --oversubscribe` the two
ranks' records end in one database with their subgraphs.

usage: dataset_generate_check.py TENSORSCHED MPIRUN WORKDIR
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from records_sql import rows  # noqa: E402

K = 4


def generate(binary, db, extra=(), mpirun=None):
    cmd = [binary, "dataset", "generate", "--count", "3", "--seed", "21", "--max-ops", "6", "--db", db,
           "--schedules-per-workload", str(K), "--repeats", "3", "--jobs", "1", *extra]
    return (mpirun + cmd) if mpirun else cmd


def check_complete(db, what):
    per_workload = rows(db, "SELECT workload_key, COUNT(*), COUNT(DISTINCT schedule_hash) FROM measurements "
                            "GROUP BY workload_key")
    assert per_workload, f"{what}: no records"
    for key, n, distinct in per_workload:
        assert n == distinct, f"{what}: a schedule of {key[:40]} measured twice ({n} records, {distinct} schedules)"
        assert 2 <= distinct <= K, f"{what}: {distinct} schedules of {key[:40]}"
    missing = rows(db, "SELECT COUNT(*) FROM workloads w WHERE NOT EXISTS "
                       "(SELECT 1 FROM subgraphs s WHERE s.workload_key = w.exact_key)")[0][0]
    assert missing == 0, f"{what}: {missing} workloads without a subgraph"
    return sum(n for _, n, _ in per_workload), len(per_workload)


def main():
    binary, mpirun, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, TENSORSCHED_CACHE_DIR=os.path.join(work, "cache"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    # Killed once some records are in, then resumed.
    db = os.path.join(work, "killed.db")
    p = subprocess.Popen(generate(binary, db), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        time.sleep(0.5)
        try:
            if rows(db, "SELECT COUNT(*) FROM measurements")[0][0] >= 5:
                break
        except sqlite3.Error:
            pass
    killed = p.poll() is None
    if killed:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    before = rows(db, "SELECT COUNT(*) FROM measurements")[0][0]
    out = subprocess.run(generate(binary, db), env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    records, workloads = check_complete(db, "resumed")
    print(f"killed after {before} records ({'SIGKILL' if killed else 'finished first'}); resumed: {records} records "
          f"of {workloads} workloads, none twice")
    again = subprocess.run(generate(binary, db), env=env, capture_output=True, text=True, timeout=600)
    assert "measured 0 schedules" in again.stdout, again.stdout

    # Two ranks, one merged database.
    if not mpirun:
        print("mpirun not found: the MPI half is skipped")
        return 0
    mdb = os.path.join(work, "mpi.db")
    out = subprocess.run(generate(binary, mdb, mpirun=[mpirun, "-np", "2", "--oversubscribe"]), env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "merged rank 1" in out.stdout, out.stdout
    merged, merged_workloads = check_complete(mdb, "merged")
    rank1 = rows(mdb + ".rank1", "SELECT COUNT(*) FROM measurements")[0][0]
    assert 0 < rank1 < merged, f"rank 1 measured {rank1} of {merged}"
    models = {m for (m,) in rows(mdb, "SELECT DISTINCT model FROM model_workloads")}
    assert models == {"random_21_00000", "random_21_00001", "random_21_00002"}, models
    print(f"mpirun -np 2: {merged} records of {merged_workloads} workloads in one database ({rank1} from rank 1); "
          f"networks {sorted(models)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
