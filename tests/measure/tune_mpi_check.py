#!/usr/bin/env python3
"""`tensorsched tune --runner mpi` as a user runs it under mpirun: rank 0 searches and keeps the
database, the other ranks build and run the candidates. Checked on a small CNN:

1. `mpirun -np 2`: every workload gets its default and its trials, measured by the runner rank;
   the summary and the database agree, and no record is an error of the transport.
2. `mpirun -np 3 --enable-recovery` with one runner rank killed (SIGKILL) mid-tune: the tune
   ends normally, says the rank was lost, loses at most the batch that rank had in flight
   (recorded as runner_lost) and measures the rest on the live rank.

usage: tune_mpi_check.py TENSORSCHED MPIRUN WORKDIR
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from records_sql import rows  # noqa: E402

TRIALS = 6
BATCH_MAX = 4  # the tune's batch with --jobs 2 is at most this many candidates


def small_cnn(path):
    rng = np.random.default_rng(5)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32), "w2")
    fc = numpy_helper.from_array(rng.standard_normal((16, 10)).astype(np.float32), "fc")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "fc"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], [w1, w2, fc])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def tune(binary, mpirun, ranks, model, db, trials, recovery=False):
    cmd = [mpirun, "-np", str(ranks), "--oversubscribe"] + (["--enable-recovery"] if recovery else [])
    return cmd + [binary, "tune", model, "--db", db, "--runner", "mpi", "--trials", str(trials), "--repeats", "3",
                  "--jobs", "2", "--e2e-iters", "0", "--network-evals", "0", "--confirm-threads", "1"]


def runner_pid(rank):
    """The pid of the tensorsched process of mpirun rank `rank` (from its environment)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"tensorsched\0tune" not in f.read().replace(b"/", b"\0"):
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"OMPI_COMM_WORLD_RANK={rank}".encode() in f.read().split(b"\0"):
                    return int(pid)
        except OSError:
            continue
    return None


def per_workload(db):
    return rows(db, "SELECT workload_key, SUM(policy = 'random'), SUM(policy = 'default'), "
                    "SUM(error_kind = 'runner_lost') FROM measurements GROUP BY workload_key")


def main():
    binary, mpirun, work = sys.argv[1], sys.argv[2], sys.argv[3]
    if not mpirun:
        print("mpirun not found: skipped")
        return 0
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, TENSORSCHED_CACHE_DIR=os.path.join(work, "cache"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    model = os.path.join(work, "small_cnn.onnx")
    small_cnn(model)

    # 1. One runner rank measures everything.
    db = os.path.join(work, "two.db")
    p = subprocess.run(tune(binary, mpirun, 2, model, db, TRIALS), env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"mpirun -np 2 tune: exit {p.returncode}\n{p.stdout}\n{p.stderr[-4000:]}"
    assert "1/1 runners live" in p.stderr, p.stderr[-4000:]
    counts = per_workload(db)
    assert len(counts) >= 2, counts
    for key, trials, default, lost in counts:  # a tiny workload's space may hold fewer than TRIALS
        assert default == 1 and 1 <= trials <= TRIALS and lost == 0, (key[:60], trials, default, lost)
    assert max(c[1] for c in counts) == TRIALS, counts
    valid = rows(db, "SELECT COUNT(*) FROM measurements WHERE error_kind = '' AND median > 0")[0][0]
    assert valid >= len(counts) * 2, f"only {valid} valid records"
    print(f"mpirun -np 2: {len(counts)} workloads, {sum(c[1] for c in counts)} trials, {valid} valid records")

    # 2. Two runner ranks, one killed once the tune is under way.
    db = os.path.join(work, "killed.db")
    trials = 3 * TRIALS
    proc = subprocess.Popen(tune(binary, mpirun, 3, model, db, trials, recovery=True), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None and killed is None:
        time.sleep(0.3)
        try:
            n = rows(db, "SELECT COUNT(*) FROM measurements WHERE policy = 'random'")[0][0]
        except sqlite3.Error:
            continue
        if n >= 4:
            killed = runner_pid(2)
            if killed:
                os.kill(killed, signal.SIGKILL)
                before = n
    try:
        out, err = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the tune did not end after rank 2 was killed\n{err[-4000:]}")
    assert killed, f"rank 2 was never found to kill\n{err[-4000:]}"
    assert proc.returncode == 0, f"tune with a killed rank: exit {proc.returncode}\n{out}\n{err[-4000:]}"
    assert "runner rank 2" in err and "lost" in err, err[-4000:]
    counts = per_workload(db)
    lost = sum(c[3] for c in counts)
    assert lost <= BATCH_MAX, f"{lost} records lost with one rank (more than its batch)"
    for key, n, default, _ in counts:
        assert default == 1 and 1 <= n <= trials, f"{key[:60]}: {n} of {trials} trials, {default} defaults"
    assert max(c[1] for c in counts) == trials, counts
    after = rows(db, "SELECT COUNT(*) FROM measurements WHERE policy = 'random' AND error_kind = ''")[0][0]
    assert after > before, "nothing valid measured after the kill"
    print(f"mpirun -np 3, rank 2 killed after {before} trials: tune ended, {lost} records runner_lost, "
          f"{after} valid trials in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
