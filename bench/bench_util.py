"""Shared pieces of the Python benchmarks: PyTorch timing and the CSV + Markdown tables."""
import csv
import os
import statistics
import time

import torch


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


def write_tables(rows, out_dir, stem):
    """Writes rows (dicts with the same keys) to out_dir/stem.csv and out_dir/stem.md."""
    with open(os.path.join(out_dir, stem + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        cols = list(rows[0])
        f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for r in rows:
            f.write("| " + " | ".join(str(r[c]) for c in cols) + " |\n")
    print(f"wrote {out_dir}/{stem}.csv and {stem}.md")


def torch_models(export_models, name):
    """(eager network, TorchScript (trace + freeze + optimize_for_inference), example input) of a zoo model."""
    build, shape = export_models.MODELS[name]
    torch.manual_seed(0)
    net = build().eval()
    export_models.disable_transformer_fast_paths(net)
    x = torch.randn(*shape)
    with torch.no_grad():
        script = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(net, x)))
    return net, script, x
