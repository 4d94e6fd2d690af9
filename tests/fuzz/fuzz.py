#!/usr/bin/env python3
"""Model fuzzer for tensorsched (no crash, no hang, no silent wrong answer).

Design
  * Seeds (seeds.py): small valid ONNX models built with onnx.helper, sharing shapes and weights so
    that `run` mostly hits the compiled-code cache. Cases 0..len(SEEDS)-1 are the seeds unmutated
    (they must be accepted and agree with ONNX Runtime: a harness self-check).
  * Every other case is a seed plus 1-3 mutations (mutators.py: attributes, shapes, dtypes, names,
    structure, initializer data, external data, and last, bytes of the serialized file: bit flips,
    truncation). Case i depends only on (--seed, i): `--cases 1 --first i` replays it.
  * Each case runs `tensorsched info M` and, when that succeeds and the case is drawn for it
    (--run-fraction; seeds always), `tensorsched run M --iters 1 --output DIR`, each under a
    timeout and an address-space limit (RLIMIT_AS), in its own process group.
  * Oracle: with onnxruntime-node installed (scripts/install-bench-deps.sh), the model is run by
    bench/ort_run.js first; tensorsched then runs on ORT's inputs and its outputs must match ORT's
    (|a - b| <= 1e-3 max|ref| + 1e-5, NaN and Inf in the same places, same shape and dtype).
  * Classes: crash (a signal, or an exit code outside 0/1/3/100-114, or a compile worker killed by a
    signal), hang (a timeout, a worker's too), unclear (exit 1 without a `tensorsched: error:` line
    naming the model, a file beside it, a node or an option; a bare library message such as
    std::bad_alloc or stoll; a Halide error; control characters in the output), wrong (outputs differ
    from ORT's), nonfinite-differs (they differ where NaN or Inf is involved, which only mutated
    weights or attributes bring: NaN semantics of max, 0 x Inf, ...), ort-rejects (tensorsched runs
    a model ORT refuses; ORT's own gaps, e.g. a missing kernel, do not count), seed-rejected (an
    unmutated seed fails), accepted, rejected (a clear error).
  * Failing cases go to OUT/failures/case-NNNNN-CLASS/ (model.onnx, side files, repro.txt);
    OUT/summary.json lists every finding. The exit code is 1 when a class in --fail-on occurred.

    tests/fuzz/fuzz.py --binary build/tensorsched --cases 300 --seed 1 --max-seconds 200 --out /tmp/fz
"""
import argparse
import concurrent.futures as cf
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutators  # noqa: E402
import seeds  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLASSES = ["crash", "hang", "unclear", "wrong", "nonfinite-differs", "ort-rejects", "seed-rejected", "accepted",
           "rejected"]
BENIGN = ("accepted", "rejected")
USAGE_CODES = set(range(100, 115))
# Messages that are a library's exception text, not a reason a user can act on.
BARE = re.compile(r"^(std::\w+|bad[_ ]\w+|sto(i|l|ll|ul|ull|f|d)|vector::_M_\w+.*|basic_string.*|map::at|"
                  r"unordered_map::at|.*\b_M_\w+.*|\[json\.exception.*|.*Assertion .* failed.*|.*Check failed.*|"
                  r"unknown error|Unknown exception)$", re.I)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", default=os.path.join(REPO, "build", "tensorsched"))
    p.add_argument("--cases", type=int, default=300, help="cases to run (the first len(SEEDS) are the seeds)")
    p.add_argument("--first", type=int, default=0, help="index of the first case (to replay one)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=None, help="failing cases, summary.json and (default) the code cache")
    p.add_argument("--cache-dir", default=None, help="compiled-code cache (default OUT/cache or a temp dir)")
    p.add_argument("--max-seconds", type=float, default=0, help="start no case after this many seconds (0: no limit)")
    p.add_argument("--no-run", action="store_true", help="info only")
    p.add_argument("--run-fraction", type=float, default=1.0, help="share of accepted cases also run")
    p.add_argument("--ort", choices=["auto", "off"], default="auto")
    p.add_argument("--fail-on", default="crash,hang,wrong,seed-rejected",
                   help="classes that make the exit code 1 (comma-separated, or 'none')")
    p.add_argument("--info-timeout", type=float, default=20)
    p.add_argument("--run-timeout", type=float, default=120)
    p.add_argument("--memory-limit-gb", type=float, default=8, help="RLIMIT_AS of tensorsched")
    p.add_argument("--max-memory", default="1G", help="tensorsched --max-memory (refuse larger models cleanly)")
    p.add_argument("--threads", type=int, default=0, help="tensorsched --threads (0: its default)")
    p.add_argument("--jobs", type=int, default=1, help="cases run in parallel")
    p.add_argument("--keep", action="store_true", help="keep every case's folder, not only failing ones")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    a = p.parse_args(argv)
    a.fail_on = set() if a.fail_on == "none" else set(a.fail_on.split(","))
    unknown = a.fail_on - set(CLASSES)
    if unknown:
        p.error(f"--fail-on: unknown classes {sorted(unknown)} (known: {CLASSES})")
    return a


# --- cases ------------------------------------------------------------------------------------

def make_case(args, index):
    """Case `index`: (seed name, mutators.Case with .data the file's bytes, mutation descriptions)."""
    rng = random.Random(f"{args.seed}:{index}")
    if index < len(seeds.SEEDS):
        seed_fn, pristine = seeds.SEEDS[index], True
    else:
        seed_fn, pristine = rng.choice(seeds.SEEDS), False
    case = mutators.Case(seed_fn(), rng)
    done = []
    if not pristine:
        cats = list(mutators.CATEGORIES)
        weights = [mutators.CATEGORIES[c][0] for c in cats]
        want = rng.choice([1, 1, 2, 2, 3])
        for _ in range(want * 4):
            if len(done) == want:
                break
            cat = rng.choices(cats, weights)[0]
            if cat == "bytes" and len(done) < want - 1:
                continue  # bytes only as the last mutation
            if cat == "bytes":
                case.data = case.model.SerializeToString()
            fn = rng.choice(mutators.CATEGORIES[cat][1])
            before, files = case.model.SerializeToString(), dict(case.files)
            try:
                what = fn(case)
            except Exception:  # noqa: BLE001 -- the mutation does not apply to this proto; draw another
                what = None
            if what:
                done.append(f"{fn.__name__}: {what}")
            else:  # undo what a mutator that gave up may have changed
                case.model.ParseFromString(before)
                case.files = files
            if cat == "bytes":
                break
    if case.data is None:
        case.data = case.model.SerializeToString()
    return seed_fn.__name__, case, done


def write_case(case, folder):
    os.makedirs(folder, exist_ok=True)
    for name, data in case.files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(case.data)
    return path


# --- processes --------------------------------------------------------------------------------

def _limits(as_bytes):
    def apply():
        if as_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run_proc(cmd, timeout, as_bytes=0, cwd=None):
    """Runs cmd in its own process group; returns dict(rc, out, err, timed_out, seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd,
                         start_new_session=True, preexec_fn=_limits(as_bytes))
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
    return {"rc": p.returncode, "out": out.decode("utf-8", "replace"), "err": err.decode("utf-8", "replace"),
            "timed_out": timed_out, "seconds": round(time.monotonic() - t0, 2), "cmd": cmd}


def error_lines(text):
    return [ln for ln in text.splitlines() if ln.startswith("tensorsched: error:")]


def classify(res, model_path):
    """(class, reason) of one tensorsched invocation: crash, hang, unclear, accepted or rejected."""
    rc = res["rc"]
    if res["timed_out"]:
        return "hang", f"no exit within {res['seconds']:.0f} s"
    if rc < 0:
        return "crash", f"killed by signal {-rc} ({signal.Signals(-rc).name if -rc in signal.valid_signals() else '?'})"
    if rc not in {0, 1, 3} | USAGE_CODES:
        return "crash", f"exit code {rc}"
    if rc in USAGE_CODES or rc == 3:
        return "unclear", f"exit code {rc} for a command line that is valid"
    if CONTROL.search(res["out"]) or CONTROL.search(res["err"]):
        return "unclear", "control characters in the output"
    if rc == 0:
        return "accepted", ""
    lines = error_lines(res["err"])
    if not lines:
        return "unclear", "exit 1 without a 'tensorsched: error:' line"
    msg = lines[0][len("tensorsched: error: "):]
    worker = re.search(r"worker (killed by signal \d+.*|timed out after .*)", msg)
    if worker:  # a compile worker's crash or hang, reported cleanly by the parent
        return ("hang" if "timed out" in worker.group(1) else "crash"), f"a worker {worker.group(1)}"
    rest = msg[len(model_path) + 2:] if msg.startswith(model_path + ": ") else msg
    if BARE.match(rest.strip()) or "terminate called" in res["err"]:
        return "unclear", "a bare library message"
    if msg.startswith("Halide:"):
        return "unclear", "a Halide error (not caught before code generation)"
    if os.path.dirname(model_path) + "/" not in msg and "node" not in msg and "--" not in msg:
        return "unclear", "the message names neither the model (or a file beside it) nor a node"
    return "rejected", ""


# --- ONNX Runtime oracle ----------------------------------------------------------------------

def find_ort(args):
    """(node command, None) when ONNX Runtime can serve as the oracle, else (None, why not)."""
    if args.ort == "off":
        return None, "off (--ort off)"
    node = shutil.which("node")
    pkg = os.path.join(os.environ.get("ORT_NODE_DIR", os.path.join(REPO, "build", "bench-node")),
                       "node_modules", "onnxruntime-node", "package.json")
    if not node:
        return None, "skipped: no node"
    if not os.path.exists(pkg) and "ORT_NODE_DIR" not in os.environ:
        return None, "skipped: onnxruntime-node not installed (scripts/install-bench-deps.sh)"
    return [node, os.path.join(REPO, "bench", "ort_run.js")], None


def npy_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


def graph_io(data):
    """(input names, output names) of a model file's bytes, or None when Python's onnx cannot read it."""
    try:
        m = onnx.load_from_string(data)
    except Exception:  # noqa: BLE001 -- any parse failure means: no oracle for this case
        return None
    inits = {t.name for t in m.graph.initializer}
    return [v.name for v in m.graph.input if v.name not in inits], [v.name for v in m.graph.output]


def compare(got, ref):
    """None when tensorsched's output `got` matches ORT's `ref`, else the difference."""
    if got.shape != ref.shape:
        return f"shape {list(got.shape)} vs ORT {list(ref.shape)}"
    if got.dtype != ref.dtype:
        return f"dtype {got.dtype} vs ORT {ref.dtype}"
    if got.dtype.kind not in "fc":
        bad = np.count_nonzero(got != ref)
        return f"{bad} of {got.size} values differ" if bad else None
    g, r = got.astype(np.float64), ref.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(r)):
        return f"NaN in {np.count_nonzero(np.isnan(g))} places vs ORT {np.count_nonzero(np.isnan(r))}"
    if not np.array_equal(np.where(np.isinf(g), g, 0), np.where(np.isinf(r), r, 0)):
        return "Inf in other places than ORT's"
    fin = np.isfinite(r)
    if not fin.any():
        return None
    scale = np.max(np.abs(r[fin]))
    tol = (1e-2 if got.dtype.itemsize <= 2 else 1e-3) * scale + 1e-5
    err = np.max(np.abs(g[fin] - r[fin]))
    return None if err <= tol else f"max abs error {err:.4g} > {tol:.3g} (max |ORT| {scale:.4g})"


def check_outputs(run_json, ort_out, out_names):
    """(None or the first difference from ORT's outputs, whether any output holds NaN or Inf)."""
    files = [npy_name(n) for n in out_names]
    if len(set(files)) != len(files):
        return None, False  # two outputs share a file name: no comparison
    got = {o["name"]: o["npy"] for o in run_json.get("outputs", [])}
    diff, nonfinite = None, False
    for name, file in zip(out_names, files):
        ref_path = os.path.join(ort_out, file)
        if not os.path.exists(ref_path):
            continue
        if name not in got:
            return f"output {name!r}: ORT produces it, tensorsched does not", False
        a, b = np.load(got[name], allow_pickle=False), np.load(ref_path, allow_pickle=False)
        for t in (a, b):
            nonfinite |= t.dtype.kind in "fc" and not np.isfinite(t).all()
        why = compare(a, b)
        if why and not diff:
            diff = f"output {name!r}: {why}"
    return diff, nonfinite


# --- one case ---------------------------------------------------------------------------------

def ts_cmd(args, *rest):
    cmd = [args.binary, *rest]
    if args.max_memory:
        cmd += ["--max-memory", args.max_memory]
    return cmd


def run_ort(args, ort, model, folder, io):
    """ORT on the model: (ok, message, input files by name)."""
    ins, outs = os.path.join(folder, "ort_in"), os.path.join(folder, "ort_out")
    res = run_proc(ort + [model, "--iters", "1", "--warmup", "0", "--save-inputs", ins, "--save-outputs", outs],
                   args.run_timeout)
    if res["rc"] != 0:
        why = "timeout" if res["timed_out"] else (res["err"].strip().splitlines() or ["?"])[-1]
        return False, why[:300], {}
    feeds = {}
    for name in io[0]:
        f = os.path.join(ins, npy_name(name))
        if os.path.exists(f):
            feeds[name] = f
    return True, "", feeds


def run_case(args, ort, work, index):
    seed_name, case, muts = make_case(args, index)
    folder = os.path.join(work, f"case-{index:05d}")
    model = write_case(case, folder)
    r = {"case": index, "seed_model": seed_name, "mutations": muts, "steps": []}
    info = run_proc(ts_cmd(args, "info", model), args.info_timeout, args.as_bytes)
    r["steps"].append(info)
    cls, why = classify(info, model)
    pristine = index < len(seeds.SEEDS)
    draw = random.Random(f"{args.seed}:{index}:run").random()
    if cls == "accepted" and not args.no_run and (pristine or draw < args.run_fraction):
        cls, why = run_step(args, ort, case, model, folder, r)
    if pristine and cls in ("rejected", "ort-rejects"):
        cls, why = "seed-rejected", f"an unmutated seed must be accepted ({cls})"
    r["class"], r["reason"] = cls, why
    r["folder"] = folder
    return r


def run_step(args, ort, case, model, folder, r):
    """The `run` half of a case, with the ORT oracle when available: (class, reason)."""
    io = graph_io(case.data)
    ort_ok, ort_why, feeds = (False, "no oracle", {})
    if ort and io:
        ort_ok, ort_why, feeds = run_ort(args, ort, model, folder, io)
        r["ort"] = "ok" if ort_ok else f"rejected: {ort_why}"
    out_dir = os.path.join(folder, "ts_out")
    cmd = ts_cmd(args, "run", model, "--iters", "1", "--output", out_dir, "--json", "--cache-dir", args.cache_dir)
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    # A name with '=' cannot be given to --input, and inputs sharing a file name are ambiguous.
    unfed = [n for n in io[0] if n not in feeds or "=" in n or not n] if io and ort_ok else []
    unfed += [n for n in feeds if [npy_name(m) for m in feeds].count(npy_name(n)) > 1]
    cmd += [f"--input={n}={f}" for n, f in feeds.items() if n not in unfed]
    res = run_proc(cmd, args.run_timeout, args.as_bytes)
    r["steps"].append(res)
    r["ran"] = True
    cls, why = classify(res, model)
    if cls != "accepted" or not ort:
        return cls, why
    if not io:
        return cls, "oracle skipped: Python's onnx cannot parse the file"
    if not ort_ok and re.search(r"Could not find an implementation|NOT_IMPLEMENTED|Cannot parse data from "
                                r"external tensors|ENAMETOOLONG", ort_why):
        return cls, f"oracle skipped: a gap of ORT or ort_run.js ({ort_why[:120]})"
    if not ort_ok:
        return "ort-rejects", f"ORT: {ort_why}"
    if unfed:
        return cls, f"oracle skipped: input {unfed[0]!r} cannot be passed to --input"
    try:
        diff, nonfinite = check_outputs(json.loads(res["out"]), os.path.join(folder, "ort_out"), io[1])
    except (ValueError, OSError, KeyError) as e:
        return "unclear", f"run --json output unreadable: {e}"
    if not diff:
        return "accepted", ""
    return ("nonfinite-differs" if nonfinite else "wrong"), diff


# --- campaign ---------------------------------------------------------------------------------

def save_failure(args, r):
    dest = os.path.join(args.out, "failures", f"case-{r['case']:05d}-{r['class']}")
    shutil.copytree(r["folder"], dest, dirs_exist_ok=True)
    lines = [f"class: {r['class']}: {r['reason']}", f"seed model: {r['seed_model']}",
             "mutations:"] + [f"  {m}" for m in r["mutations"]]
    if "ort" in r:
        lines.append(f"onnxruntime: {r['ort']}")
    for s in r["steps"]:
        cmd = [c.replace(r["folder"], dest) for c in s["cmd"]]
        lines += ["", "$ " + " ".join(c if re.fullmatch(r"[\w./=:,-]+", c) else repr(c) for c in cmd),
                  f"exit {s['rc']}{' (timeout)' if s['timed_out'] else ''} after {s['seconds']} s",
                  "stderr:", s["err"][-4000:].replace(r["folder"], dest)]
    lines += ["", f"replay: {sys.argv[0]} --binary {args.binary} --seed {args.seed} --first {r['case']} --cases 1"]
    with open(os.path.join(dest, "repro.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    r["folder"] = dest


def finding(r):
    steps = r["steps"]
    err = error_lines(steps[-1]["err"])
    last = err[0] if err else (steps[-1]["err"].strip().splitlines() or [""])[-1]
    return {"case": r["case"], "class": r["class"], "reason": r["reason"], "seed_model": r["seed_model"],
            "mutations": r["mutations"], "command": steps[-1]["cmd"][1], "stderr": last[:500],
            "ort": r.get("ort"), "folder": r["folder"]}


def campaign(args, ort, work):
    """Runs the cases (stopping early at --max-seconds); returns (results, started count, stopped)."""
    t0, results, stopped = time.monotonic(), [], False
    pending, nxt, end = set(), args.first, args.first + args.cases
    with cf.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        while nxt < end or pending:
            while nxt < end and len(pending) < max(1, args.jobs):
                if args.max_seconds and time.monotonic() - t0 > args.max_seconds:
                    stopped, end = True, nxt
                    break
                pending.add(ex.submit(run_case, args, ort, work, nxt))
                nxt += 1
            if not pending:
                break
            done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                r = fut.result()
                results.append(r)
                report_case(args, r, len(results), time.monotonic() - t0)
    return sorted(results, key=lambda r: r["case"]), nxt - args.first, stopped


def report_case(args, r, n, elapsed):
    bad = r["class"] not in BENIGN
    if bad and args.out:
        save_failure(args, r)
    if not args.keep and not bad:
        shutil.rmtree(r["folder"], ignore_errors=True)
    if bad or args.verbose:
        f = finding(r)
        print(f"[fuzz] case {r['case']} {r['class']}: {r['reason']} | {r['seed_model']}: "
              f"{'; '.join(r['mutations']) or 'unmutated'} | {f['command']}: {f['stderr'][:200]}", flush=True)
    if n % 25 == 0:
        print(f"[fuzz] {n} cases, {elapsed:.0f} s", flush=True)


def main(argv):
    args = parse_args(argv)
    if not os.access(args.binary, os.X_OK):
        print(f"fuzz: {args.binary}: not an executable (build tensorsched first)", file=sys.stderr)
        return 2
    args.binary = os.path.abspath(args.binary)
    args.as_bytes = int(args.memory_limit_gb * 2**30)
    work = tempfile.mkdtemp(prefix="tensorsched-fuzz-")
    if args.out:
        args.out = os.path.abspath(args.out)
        shutil.rmtree(os.path.join(args.out, "failures"), ignore_errors=True)
        os.makedirs(args.out, exist_ok=True)
    args.cache_dir = os.path.abspath(args.cache_dir or os.path.join(args.out or work, "cache"))
    helptext = run_proc([args.binary, "run", "--help"], 30)["out"]
    if args.max_memory and "--max-memory" not in helptext:
        print("fuzz: this tensorsched has no --max-memory; running without it", file=sys.stderr)
        args.max_memory = ""
    ort, ort_note = find_ort(args)
    t0 = time.monotonic()
    try:
        results, started, stopped = campaign(args, ort, work)
    finally:
        shutil.rmtree(work, ignore_errors=True) if not args.keep else None
    counts = {c: sum(r["class"] == c for r in results) for c in CLASSES}
    seconds = round(time.monotonic() - t0, 1)
    ran = sum(bool(r.get("ran")) for r in results)
    print(f"[fuzz] seed {args.seed}: {len(results)} of {args.cases} cases in {seconds} s"
          f"{' (stopped at --max-seconds)' if stopped else ''}; {ran} also run; ONNX Runtime oracle: "
          f"{ort_note or 'on'}")
    for c in CLASSES:
        print(f"  {c:18} {counts[c]}")
    summary = {"seed": args.seed, "first": args.first, "cases_planned": args.cases, "cases_run": len(results),
               "cases_with_run": ran, "stopped_at_max_seconds": stopped, "seconds": seconds,
               "ort": ort_note or "on", "binary": args.binary, "counts": counts,
               "findings": [finding(r) for r in results if r["class"] not in BENIGN]}
    if args.out:
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    failed = [c for c in CLASSES if c in args.fail_on and counts[c]]
    if failed:
        print(f"[fuzz] FAIL: {', '.join(f'{counts[c]} {c}' for c in failed)}"
              f"{' (see ' + os.path.join(args.out, 'failures') + ')' if args.out else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
