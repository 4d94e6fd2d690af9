"""Per-layer benchmark: every distinct conv / matmul workload of at least --min-mflop in the given
zoo networks, tensorsched (its step inside the whole network, `run --profile`, default schedule or
--db's) vs ONNX Runtime running the same single node (an ONNX file of just that node, same shapes
and weights, its own fusions allowed; its fastest of --iters runs), with the % of this machine's
measured FMA peak. tensorsched also runs that same single-node file (`tensorsched_node_ms`, its
fastest whole run, layout conversions at the file's input and output included): like for like
with the ORT column, weights as warm. A second ONNX Runtime column is the same node inside ORT's whole-network run
(its profile's median kernel time per run), where its weights arrive as cold as tensorsched's; a
single node run again and again keeps its weights in cache.

    /usr/bin/python3 bench/per_layer.py [--zoo build/zoo] [--models resnet18,...] [--threads 1,2]
        [--iters 30] [--rounds 3] [--db records.db] [--out docs/bench] [--stem per_layer]

Writes OUT/STEM.csv and .md. Ratios are ort_over_tensorsched (above 1: tensorsched faster).
Nothing else may run meanwhile: two cores, shared.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import onnx
from onnx import helper, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util  # noqa: E402

TS = os.path.join(bench_util.REPO, "build", "tensorsched")
ANCHORS = ("Conv", "MatMul", "Gemm")


def run_json(model, threads, iters, db, *extra):
    """`tensorsched run MODEL --json` (the zoo's code cache; with db, its tuned schedules): the
    summary object it prints last."""
    cmd = [TS, "run", model, "--iters", str(iters), "--threads", str(threads), "--json", "-q", *extra,
           "--cache-dir", os.path.join(bench_util.REPO, "build", "zoo", "cache")]
    if db:
        cmd += ["--db", db]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def profile(model, threads, iters, db):
    """tensorsched's per-step profile of the whole network: [{step, key, name, nodes, ms, gflops}]."""
    return run_json(model, threads, iters, db, "--profile")["profile"]


def single_node_ms(layer, threads, iters, db):
    """tensorsched's fastest whole run of a single-node ONNX file (`run`, min of iters; with db, its
    tuned schedules): the same file and statistic as the ORT column, the graph-input and -output
    conversions included."""
    return run_json(layer, threads, iters, db)["latency_ms"]["min"]


def exact_keys(model):
    """Each workload's exact key (tensorsched workloads --json): {key hash: exact key}."""
    cmd = [TS, "workloads", model, "--json", "-q"]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    keys = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            w = json.loads(line)
            keys[w["key"]] = w["exact_key"]
    return keys


def shapes_from_exact_key(node, exact_key):
    """{node input name: dims} from a workload's exact key, whose anchor call `Op(inA,inB,..)` names
    its operands in the node's input order and declares `inA:float32[d0,d1,..]`: ONNX shape
    inference leaves some tensors rankless (ShuffleNet's Slice outputs), which ORT then rejects."""
    decls = dict(re.findall(r"(in\d+):float32\[([\d,]*)\]", exact_key))
    call = re.search(re.escape(node.op_type) + r"\(([^)]*)\)", exact_key)
    if not call:
        return {}
    shapes = {}
    for name, arg in zip(node.input, call.group(1).split(",")):
        if arg in decls and decls[arg]:
            shapes[name] = [int(d) for d in decls[arg].split(",")]
    return shapes


def single_node_model(model, node_name, path, exact_key=""):
    """Writes an ONNX model of the one node named node_name of `model` (shapes inferred, its
    constant inputs copied as initializers, the others graph inputs) to path; False if absent."""
    node = next((n for n in model.graph.node if n.name == node_name), None)
    if node is None:
        return False
    types = {v.name: v.type for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    for name, dims in shapes_from_exact_key(node, exact_key).items():
        # Not where ONNX inferred another rank: tensorsched's workload may see the tensor
        # reshaped (ConvNeXt's MatMuls over [1, 56, 56, 96] run as [3136, 96]).
        known = types.get(name)
        if known is None or not known.tensor_type.HasField("shape") or len(known.tensor_type.shape.dim) == len(dims):
            types[name] = helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, dims)
    inits = {t.name: t for t in model.graph.initializer}
    inputs, initializers = [], []
    for name in node.input:
        if not name:
            continue
        if name in inits:
            initializers.append(inits[name])
        else:
            inputs.append(helper.make_value_info(name, types[name]))
    outputs = [helper.make_value_info(o, types[o]) for o in node.output]
    g = helper.make_graph([node], "layer", inputs, outputs, initializers)
    m = helper.make_model(g, opset_imports=model.opset_import)
    m.ir_version = model.ir_version
    onnx.save(m, path)
    return True


def ort_in_network_ms(node_ms, step_nodes, outputs_of):
    """ONNX Runtime's time for the ONNX nodes of one tensorsched step inside ORT's whole-network
    run: the kernel events named after one of those nodes, after a fusion of one ("NODE/...Fusion/",
    e.g. MatMul+Add as a Gemm, x * sigmoid(x) as QuickGelu), or after one of their output tensors
    plus "_nchwc" (an NCHWc conv, its activation and residual add fused in, is named after the
    tensor it writes); None when none matched."""
    names = set(step_nodes)
    for n in step_nodes:
        names.update(t + "_nchwc" for t in outputs_of.get(n, []))
    prefixes = tuple(n + "/" for n in step_nodes)
    times = [ms for n, ms in node_ms.items() if n in names or n.startswith(prefixes)]
    return sum(times) if times else None


def whole_network_rounds(path, threads, a, tmp):
    """--rounds alternating whole-network runs of tensorsched (`run --profile`) and ONNX Runtime
    (profiled: each layer's time with its weights as cold as tensorsched's, where the single-node
    runs keep them in cache). Returns (tensorsched's steps with the median of their round times
    and "mflop", {ORT node: median of its round times}): the 2 shared cores drift over minutes."""
    profiles, traces = [], []
    for r in range(a.rounds):
        profiles.append(profile(path, threads, a.iters, a.db))
        trace = os.path.join(tmp, f"{os.path.basename(os.path.dirname(path))}_{threads}_{r}_ort_trace.json")
        bench_util.ort_timing(path, threads, a.iters, profile=trace)
        traces.append(bench_util.ort_node_ms(trace))
    steps = []
    for i, st in enumerate(profiles[0]):
        st = dict(st, mflop=st["gflops"] * st["ms"])  # GFLOP/s x ms = MFLOP
        st["ms"] = statistics.median(p[i]["ms"] for p in profiles)
        st["gflops"] = st["mflop"] / st["ms"]
        steps.append(st)
    node_ms = {n: statistics.median(t[n] for t in traces if n in t) for n in traces[0]}
    return steps, node_ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", default=os.path.join(bench_util.REPO, "build", "zoo"))
    ap.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,efficientnet_b0,transformer")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3, help="alternating whole-network rounds (medians)")
    ap.add_argument("--min-mflop", type=float, default=20)
    ap.add_argument("--db", default="", help="records database: tensorsched runs its tuned schedules")
    bench_util.add_output_args(ap, "per_layer")
    a = ap.parse_args()

    peak = bench_util.host_check("before")
    rows = []
    tmp = tempfile.mkdtemp(prefix="per_layer_")
    for name in a.models.split(","):
        path = os.path.join(a.zoo, name, "model.onnx")
        model = shape_inference.infer_shapes(onnx.load(path))
        keys = exact_keys(path)
        outputs_of = {n.name: list(n.output) for n in model.graph.node}
        for threads in [int(t) for t in a.threads.split(",")]:
            seen = set()
            steps, node_ms = whole_network_rounds(path, threads, a, tmp)
            for st in steps:
                mflop = st["mflop"]
                if st["key"] in seen or not st["nodes"] or mflop < a.min_mflop:
                    continue
                anchor = st["nodes"][0]
                op = next((n.op_type for n in model.graph.node if n.name == anchor), "")
                if op not in ANCHORS:
                    continue
                seen.add(st["key"])
                layer = os.path.join(tmp, f"{name}_{st['key']}.onnx")
                if not single_node_model(model, anchor, layer, keys.get(st["key"], "")):
                    continue
                # ORT's fastest run, not its median: a single node's runs spread 1.5-7.4 ms around a
                # 5.5 ms median (one Transformer MatMul) where the whole network's do not, so the
                # median is mostly ORT's per-call overhead. Against tensorsched's mean step time
                # inside the network, the minimum is the conservative side.
                t = bench_util.ort_timing(layer, threads, a.iters)
                ort_ms, ort_version = t["min_ms"], t["ort_version"]
                ts_node_ms = single_node_ms(layer, threads, a.iters, a.db)
                in_net = ort_in_network_ms(node_ms, st["nodes"], outputs_of)
                peak_t = peak["gflops_1t"] * (1 if threads == 1 else min(threads, peak["threads"]))
                row = {"model": name, "threads": threads, "workload": st["key"], "ops": st["name"], "node": anchor,
                       "mflop": round(mflop, 1), "tensorsched_ms": round(st["ms"], 4), "ort_ms": round(ort_ms, 4),
                       "ort_over_tensorsched": round(ort_ms / st["ms"], 3),
                       "tensorsched_node_ms": round(ts_node_ms, 4), "ort_over_tensorsched_node": round(ort_ms / ts_node_ms, 3),
                       "ort_in_network_ms": round(in_net, 4) if in_net is not None else "",
                       "ort_in_network_over_tensorsched": round(in_net / st["ms"], 3) if in_net is not None else "",
                       "tensorsched_gflops": round(st["gflops"], 1),
                       "tensorsched_pct_peak": round(100 * st["gflops"] / peak_t, 1),
                       "ort_pct_peak": round(100 * mflop / ort_ms / peak_t, 1)}
                rows.append(row)
                print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    peak_after = bench_util.host_check("after")
    summary = []
    for threads in sorted({r["threads"] for r in rows}):
        rs = [r for r in rows if r["threads"] == threads]
        in_network = [r["ort_in_network_over_tensorsched"] for r in rs if r["ort_in_network_over_tensorsched"] != ""]
        summary.append({"threads": threads, "layers": len(rs),
                        "geomean_ort_over_tensorsched": round(bench_util.geomean(r["ort_over_tensorsched"] for r in rs), 3),
                        "layers_at_or_above_ort": sum(r["ort_over_tensorsched"] >= 1 for r in rs),
                        "geomean_ort_over_tensorsched_node": round(bench_util.geomean(r["ort_over_tensorsched_node"] for r in rs), 3),
                        "layers_at_or_above_ort_node": sum(r["ort_over_tensorsched_node"] >= 1 for r in rs),
                        "layers_at_or_above_ort_either": sum(max(r["ort_over_tensorsched"], r["ort_over_tensorsched_node"]) >= 1 for r in rs),
                        "geomean_ort_in_network_over_tensorsched": round(bench_util.geomean(in_network), 3) if in_network else "",
                        "layers_at_or_above_ort_in_network": sum(v >= 1 for v in in_network),
                        "layers_100mflop_at_75pct_peak": sum(r["tensorsched_pct_peak"] >= 75 for r in rs if r["mflop"] >= 100),
                        "layers_100mflop": sum(r["mflop"] >= 100 for r in rs),
                        "fma_peak_1t_all": bench_util.peak_summary(peak, peak_after),
                        "ort_version": ort_version})
    for s in summary:
        print(s)
    bench_util.write_tables(rows, a.out, a.stem, summary)


if __name__ == "__main__":
    main()
