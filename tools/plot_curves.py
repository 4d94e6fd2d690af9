#!/usr/bin/python3
"""Plots best-time-vs-trials curves from bench/cost_model_curves.py's CSV (Debian python3-matplotlib).

  tools/plot_curves.py docs/bench/cost_model_curves.csv docs/bench/cost_model_curves.png

One panel per workload (best ms vs trials, one line per policy) and a last panel with the
geometric mean over workloads of best / (best any policy found).
"""
import csv
import math
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, png_path):
    data = defaultdict(lambda: defaultdict(list))  # workload -> policy -> [best_ms by trial]
    names = {}
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            data[r["workload"]][r["policy"]].append(float(r["best_ms"]))
            names[r["workload"]] = r["name"]
    workloads = list(data)
    policies = sorted({p for w in data.values() for p in w})
    n = len(workloads) + 1
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for i, w in enumerate(workloads):
        ax = axes[i // cols][i % cols]
        for p in policies:
            ys = [y for y in data[w][p] if math.isfinite(y)]
            ax.plot(range(len(data[w][p]) - len(ys) + 1, len(data[w][p]) + 1), ys, label=p)
        ax.set_title(f"{names[w]} {w[:8]}", fontsize=9)
        ax.set_xlabel("trials")
        ax.set_ylabel("best ms")
    ax = axes[(n - 1) // cols][(n - 1) % cols]
    for p in policies:
        length = min(len(data[w][p]) for w in workloads)
        ys = []
        for t in range(length):
            logs = []
            for w in workloads:
                best = min(min(v) for v in data[w].values())
                v = data[w][p][t]
                logs.append(math.log(v / best) if math.isfinite(v) else math.nan)
            ok = [x for x in logs if math.isfinite(x)]
            ys.append(math.exp(sum(ok) / len(ok)) if len(ok) == len(logs) else math.nan)
        ax.plot(range(1, length + 1), ys, label=p)
    ax.set_title("geomean best / best found", fontsize=9)
    ax.set_xlabel("trials")
    ax.legend(fontsize=8)
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    print("wrote", png_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
