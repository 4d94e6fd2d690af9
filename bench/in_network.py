"""In-network per-layer comparison: every tensorsched step of a zoo network (`run --profile`)
next to the ONNX Runtime nodes that compute the same ONNX nodes inside ORT's own run of the same
network (its profiler, bench/ort_run.js --profile), both after warm-ups, both with the caches as
the network leaves them. bench/per_layer.py times ORT on single-node files instead; there ORT pays
its layout reorders and thread-pool start per call, and its timings are per-call overhead for
small nodes. Here both sides are timed where they run.

    /usr/bin/python3 bench/in_network.py [--models resnet50,...] [--threads 1,2] [--iters 50]
        [--warmup 10] [--rounds 1] [--db records.db] [--top 12] [--out docs/bench] [--stem in_network]

Matching: an ORT node belongs to the tensorsched step covering the ONNX node it is named after
(ORT keeps a node's name, or names a fused or NCHWc node after an output tensor of one of the
nodes it fused, plus "_nchwc"). ORT nodes that match no step (its layout reorders) are summed as
`ort_only`. Per step: medians over the timed runs; with --rounds R, both sides run alternately R
times and each step, node and run keeps its fastest round. Writes OUT/STEM.csv and .md (--stem, default in_network); prints the
totals and the steps where tensorsched loses most. Nothing else may run meanwhile.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util  # noqa: E402

TS = os.path.join(bench_util.REPO, "build", "tensorsched")
ORT_RUN = os.path.join(bench_util.REPO, "bench", "ort_run.js")


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else 0.0


def ts_profile(model, threads, iters, db):
    cmd = [TS, "-q", "run", model, "--iters", str(iters), "--threads", str(threads), "--profile", "--json"]
    if db:
        cmd += ["--db", db, "--allow-foreign-records"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    return j["latency_ms"]["median"], j["profile"]


def ort_profile(model, threads, iters, warmup):
    """(median run ms, {ORT node name: median ms over the timed runs})."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        out = subprocess.run(["node", ORT_RUN, model, "--threads", str(threads), "--iters", str(iters),
                              "--warmup", str(warmup), "--json", "--profile", trace],
                             capture_output=True, text=True, check=True).stdout
        events = json.load(open(trace))
    runs = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    start = runs[warmup] if len(runs) > warmup else 0  # the first timed run
    per_node = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= start:
            per_node[e["name"][: -len("_kernel_time")]].append(e["dur"] / 1000.0)
    return json.loads(out.strip().splitlines()[-1])["median_ms"], {k: median(v) for k, v in per_node.items()}


def node_aliases(model):
    """ONNX node name -> the names ORT may give the node (its name, its outputs, +_nchwc)."""
    g = onnx.load(model, load_external_data=False).graph
    aliases = {}
    for n in g.node:
        names = {n.name}
        for o in n.output:
            names |= {o, o + "_nchwc"}
        aliases[n.name] = names
    return aliases


def match(steps, ort_nodes, aliases):
    """Per step (in step order) the ORT nodes assigned to it; and the unmatched ORT nodes."""
    owner = {}
    for s in sorted(steps, key=lambda s: s["step"]):
        for node in s["nodes"]:
            for alias in aliases.get(node, {node}):
                owner.setdefault(alias, s["step"])
    assigned = collections.defaultdict(list)
    unmatched = []
    for name in ort_nodes:
        step = owner.get(name)
        if step is None and name.startswith("fused "):  # ORT's fused Gemm + activation: "fused <node>"
            step = owner.get(name[len("fused "):])
        if step is None:  # ORT fusions named "<node>/<FusionName>/"
            step = next((owner[p] for p in owner if name.startswith(p + "/")), None)
        (unmatched if step is None else assigned[step]).append(name)
    return assigned, unmatched


def fastest_rounds(model, threads, args):
    """Both profiles, alternately for --rounds rounds; per step, per ORT node and per run the
    fastest round (interference on a shared host only ever adds time, and one round of each side
    may fall in different phases of the host)."""
    ts_ms = ort_ms = float("inf")
    steps, ort_nodes = {}, {}
    for _ in range(args.rounds):
        run_ms, profile = ts_profile(model, threads, args.iters, args.db)
        ts_ms = min(ts_ms, run_ms)
        for p in profile:
            if p["step"] not in steps or p["ms"] < steps[p["step"]]["ms"]:
                steps[p["step"]] = p
        run_ms, nodes = ort_profile(model, threads, args.iters, args.warmup)
        ort_ms = min(ort_ms, run_ms)
        for name, ms in nodes.items():
            ort_nodes[name] = min(ort_nodes.get(name, ms), ms)
    return ts_ms, list(steps.values()), ort_ms, ort_nodes


def compare(model_name, model, threads, args):
    ts_ms, steps, ort_ms, ort_nodes = fastest_rounds(model, threads, args)
    assigned, unmatched = match(steps, ort_nodes, node_aliases(model))
    rows = []
    for s in sorted(steps, key=lambda s: s["step"]):
        names = assigned.get(s["step"], [])
        ort_step = sum(ort_nodes[n] for n in names) if names else None
        rows.append({"model": model_name, "threads": threads, "step": s["step"], "workload": s["key"],
                     "ops": s["name"], "node": s["nodes"][0], "tensorsched_ms": round(s["ms"], 4),
                     "ort_ms": None if ort_step is None else round(ort_step, 4),
                     "ort_over_tensorsched": None if not ort_step else round(ort_step / s["ms"], 3),
                     "tensorsched_gflops": round(s["gflops"], 1), "ort_nodes": len(names)})
    total = {"model": model_name, "threads": threads, "tensorsched_run_ms": ts_ms, "ort_run_ms": ort_ms,
             "tensorsched_steps_ms": round(sum(s["ms"] for s in steps), 3),
             "ort_nodes_ms": round(sum(ort_nodes.values()), 3),
             "ort_only_ms": round(sum(ort_nodes[n] for n in unmatched), 3),
             "ort_only": sorted(unmatched, key=lambda n: -ort_nodes[n])[:5]}
    return rows, total


def write(rows, totals, out, stem):
    os.makedirs(out, exist_ok=True)
    cols = list(rows[0].keys())
    with open(os.path.join(out, stem + ".csv"), "w") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join("" if r[c] is None else str(r[c]) for c in cols) + "\n")
    tcols = ["model", "threads", "tensorsched_run_ms", "ort_run_ms", "tensorsched_steps_ms", "ort_nodes_ms", "ort_only_ms"]
    with open(os.path.join(out, stem + ".md"), "w") as f:
        f.write("| " + " | ".join(tcols) + " |\n|" + "---|" * len(tcols) + "\n")
        for t in totals:
            f.write("| " + " | ".join(str(t[c]) for c in tcols) + " |\n")
        f.write("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for r in rows:
            f.write("| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenet_v2,squeezenet1_0,transformer")
    ap.add_argument("--zoo", default=os.path.join(bench_util.REPO, "build", "zoo"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds of both sides; each step's fastest is kept")
    ap.add_argument("--db", default=None, help="records database: tensorsched runs its tuned schedules")
    ap.add_argument("--top", type=int, default=12, help="steps printed per run, largest loss first")
    bench_util.add_output_args(ap, "in_network")
    args = ap.parse_args()
    rows, totals = [], []
    for name in args.models.split(","):
        model = os.path.join(args.zoo, name, "model.onnx")
        for threads in [int(t) for t in args.threads.split(",")]:
            r, t = compare(name, model, threads, args)
            rows += r
            totals.append(t)
            print(json.dumps(t))
            lost = sorted((x for x in r if x["ort_ms"] is not None), key=lambda x: x["ort_ms"] - x["tensorsched_ms"])
            for x in lost[: args.top]:
                print(f"  {x['tensorsched_ms']:8.3f} ms vs ORT {x['ort_ms']:8.3f} ms  {x['ops']:24s} {x['node']}")
    write(rows, totals, args.out, args.stem)
    print(f"wrote {args.out}/{args.stem}.csv and {args.stem}.md")


if __name__ == "__main__":
    main()
