"""Default-rule knob variants timed inside the whole network: the given workloads' steps with the
default schedule and with each variant (`run --profile --knobs KEY=JSON` on every given workload),
the variants run in rotation (the order reversed every other round, so none always follows the
same neighbour) for ROUNDS rounds of --iters runs. A workload measured alone keeps its weights'
page tables warm and its input in cache; here each step runs where the network leaves the caches.

    /usr/bin/python3 bench/knobs_in_network.py MODEL --keys KEY,KEY,... [--threads 1] [--rounds 6]
        [--iters 10] [--binary build/tensorsched] VARIANT_JSON [VARIANT_JSON ...]

e.g. bench/knobs_in_network.py build/zoo/efficientnet_b4/model.onnx --keys ee3e0d2e5f149f89
     '{"chunk":"0"}' '{"blocks":"4"}'

Prints one row per variant: the network's latency (fastest and median round), the sum of the given
steps (fastest and median round), and per workload the default's fastest round over the variant's
(above 1: the variant is faster). Fastest rounds, because on a shared host interference only ever
adds time. Nothing else may run meanwhile.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args, knobs):
    """One `run --profile --json`: the network's median latency and each given workload's step
    time per inference (its steps summed)."""
    cmd = [args.binary, "-q", "run", args.model, "--threads", str(args.threads), "--iters", str(args.iters),
           "--profile", "--json"]
    if knobs != "{}":
        for k in args.keys:
            cmd += ["--knobs", f"{k}={knobs}"]
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    steps = {k: 0.0 for k in args.keys}
    for p in out["profile"]:
        if p["key"] in steps:
            steps[p["key"]] += p["ms"]
    missing = set(args.keys) - {p["key"] for p in out["profile"]}
    if missing:
        sys.exit(f"{args.model}: no step of workload(s) {', '.join(sorted(missing))} (see `tensorsched workloads`)")
    return out["latency_ms"]["median"], steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("variants", nargs="+", help="knob objects, e.g. '{\"chunk\":\"0\"}'")
    ap.add_argument("--keys", required=True, help="workload key hashes, comma-separated")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "tensorsched"))
    args = ap.parse_args()
    args.keys = [k for k in args.keys.split(",") if k]
    variants = ["{}"] + args.variants
    results = {v: [] for v in variants}
    for r in range(args.rounds):
        for v in variants if r % 2 == 0 else variants[::-1]:
            results[v].append(run(args, v))
        print(f"round {r + 1}: network ms " + " ".join(f"{results[v][-1][0]:.2f}" for v in variants), flush=True)
    fastest = {v: {k: min(x[1][k] for x in results[v]) for k in args.keys} for v in variants}
    print(f"{'variant':<24} {'net min':>8} {'net med':>8} {'steps min':>9} {'steps med':>9}   "
          + " ".join(f"{k[:8]:>8}" for k in args.keys))
    for v in variants:
        nets = [x[0] for x in results[v]]
        steps = [sum(x[1].values()) for x in results[v]]
        ratios = " ".join(f"{fastest['{}'][k] / fastest[v][k]:8.3f}" for k in args.keys)
        print(f"{v:<24} {min(nets):8.2f} {statistics.median(nets):8.2f} {min(steps):9.3f} "
              f"{statistics.median(steps):9.3f}   {ratios}")


if __name__ == "__main__":
    main()
