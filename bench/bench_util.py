"""Shared pieces of the Python benchmarks: PyTorch and ONNX Runtime timing, the FMA peak of the
machine, and the CSV + Markdown tables."""
import csv
import ctypes
import json
import math
import os
import shutil
import statistics
import subprocess
import time

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORT_RUN = os.path.join(REPO, "bench", "ort_run.js")
FMA_PEAK_SRC = os.path.join(REPO, "bench", "fma_peak.cpp")
FMA_PEAK_BIN = os.path.join(REPO, "build", "fma_peak")


def add_output_args(ap, stem):
    """--out (default docs/bench) and --stem: a benchmark writes OUT/STEM.*, one stable name that
    its next run overwrites (docs/benchmarks.md quotes it)."""
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "bench"))
    ap.add_argument("--stem", default=stem, help="output files: OUT/STEM.* (default %(default)s)")


def set_torch_threads(n):
    """Runs PyTorch on n threads. torch.set_num_threads sets ATen's pool only: Debian's torch calls
    the system BLAS (OpenBLAS, pthread build), whose own pool keeps every core, so a "1-thread"
    PyTorch matmul ran on 2 cores. Every loaded OpenBLAS is told n as well."""
    torch.set_num_threads(n)
    with open("/proc/self/maps") as maps:
        libs = {line.split()[-1] for line in maps if "libopenblas" in line}
    for lib in libs:
        setter = getattr(ctypes.CDLL(lib), "openblas_set_num_threads", None)
        if setter:
            setter(n)


def repo_relative(value):
    """`value` (nested dicts, lists, strings) with paths inside the repository made relative to
    it, so that results committed to docs/ name no folder of the machine that measured them."""
    if isinstance(value, str):
        return os.path.relpath(value, REPO) if value.startswith(REPO + os.sep) else value
    if isinstance(value, dict):
        return {k: repo_relative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [repo_relative(v) for v in value]
    return value

def torch_median_ms(fn, x, iters):
    """Median milliseconds of fn(x) over iters runs, after 3 warm-up runs (lazy initialization)."""
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def ort_median_ms(model_path, threads, iters, warmup=3):
    """(median milliseconds, ONNX Runtime version) of model_path under ONNX Runtime's CPU engine
    (bench/ort_run.js: intra-op threads = threads, all graph optimizations, random inputs)."""
    j = ort_timing(model_path, threads, iters, warmup)
    return j["median_ms"], j["ort_version"]


def ort_timing(model_path, threads, iters, warmup=3, profile=None):
    """bench/ort_run.js's JSON for model_path: median_ms, min_ms, max_ms, ort_version, ...;
    with `profile`, ONNX Runtime's own trace of every run is written to that file."""
    if shutil.which("node") is None:
        raise RuntimeError("node not found: run scripts/install-bench-deps.sh")
    cmd = ["node", ORT_RUN, model_path, "--threads", str(threads), "--iters", str(iters),
           "--warmup", str(warmup), "--json"] + (["--profile", profile] if profile else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 3:  # ort_run.js: package missing
        raise RuntimeError("onnxruntime-node is not installed: run scripts/install-bench-deps.sh "
                           f"({p.stderr.strip()})")
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def ort_node_ms(trace_file):
    """{ORT node name: median milliseconds per run} from ort_timing's profile (a Chrome trace with
    one "<node>_kernel_time" event per node and run, warm-ups included: the median drops them)."""
    with open(trace_file) as f:
        events = json.load(f)
    per_node = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") == "Node" and name.endswith("_kernel_time"):
            per_node.setdefault(name[: -len("_kernel_time")], []).append(e["dur"] / 1000.0)
    return {n: statistics.median(ts) for n, ts in per_node.items()}


def fma_peak_gflops():
    """This machine's FP32 FMA peak, {"gflops_1t", "gflops_all", "threads", ...}: runs
    bench/fma_peak.cpp, compiled into build/fma_peak when missing or older than the source."""
    if (not os.path.exists(FMA_PEAK_BIN)
            or os.path.getmtime(FMA_PEAK_BIN) < os.path.getmtime(FMA_PEAK_SRC)):
        os.makedirs(os.path.dirname(FMA_PEAK_BIN), exist_ok=True)
        subprocess.run(["c++", "-O3", "-march=native", "-pthread", FMA_PEAK_SRC, "-o", FMA_PEAK_BIN],
                       check=True)
    out = subprocess.run([FMA_PEAK_BIN], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


# Least ratio of the all-core FMA peak to the one-core peak that counts as every core free: on
# this shared 2-core host the second core was at times held by another tenant (2 threads:
# 204-247 GFLOP/s against 202-212 on 1), when every 2-thread timing runs at one core's speed.
MIN_ALL_CORE_SCALING = 0.8


def host_check(label):
    """fma_peak_gflops() plus "cores_free": whether the all-core peak scales to at least
    MIN_ALL_CORE_SCALING of the one-core peak times the threads; prints a warning where it does
    not (multi-thread timings of that stretch then measure contention, not code). Benchmarks call
    it before and after their runs and record both."""
    peak = fma_peak_gflops()
    scaling = peak["gflops_all"] / (peak["gflops_1t"] * peak["threads"])
    peak["cores_free"] = scaling >= MIN_ALL_CORE_SCALING
    print(f"{label}: FMA peak {peak['gflops_1t']:.1f} GFLOP/s on 1 thread, {peak['gflops_all']:.1f} on "
          f"{peak['threads']} ({scaling:.2f} of linear)", flush=True)
    if not peak["cores_free"]:
        print(f"WARNING: {label}: the {peak['threads']} cores do not scale (another load holds one): multi-thread "
              "timings are not comparable", flush=True)
    return peak


def peak_summary(before, after):
    """The host checks of a run as one summary field: "1t/all before -> 1t/all after"."""
    return " -> ".join(f"{p['gflops_1t']:.0f}/{p['gflops_all']:.0f}{'' if p['cores_free'] else ' (cores busy)'}"
                       for p in (before, after))


def geomean(values):
    """Geometric mean of positive numbers (the summary of ratios)."""
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def write_tables(rows, out_dir, stem, summary=None):
    """Writes rows (dicts with the same keys) to out_dir/stem.csv and out_dir/stem.md; summary, a
    list of dicts with the same keys as each other, goes under the Markdown table as its own table."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, stem + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        cols = list(rows[0])
        f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for r in rows:
            f.write("| " + " | ".join(str(r[c]) for c in cols) + " |\n")
        if summary:
            scols = list(summary[0])
            f.write("\n| " + " | ".join(scols) + " |\n|" + "---|" * len(scols) + "\n")
            for r in summary:
                f.write("| " + " | ".join(str(r[c]) for c in scols) + " |\n")
    print(f"wrote {out_dir}/{stem}.csv and {stem}.md")


def torch_models(export_models, name):
    """(eager network, TorchScript (trace + freeze + optimize_for_inference), example input) of a zoo model."""
    build, shape = export_models.ALL_MODELS[name]
    torch.manual_seed(0)
    net = build().eval()
    export_models.disable_transformer_fast_paths(net)
    x = torch.randn(*shape)
    with torch.no_grad():
        script = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(net, x)))
    return net, script, x
