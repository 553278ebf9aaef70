#!/usr/bin/env python3
"""Markdown for case 7 (bench/roofline.sh): a training step's FLOPs over its measured time, as a
share of the best convolution throughput measured by bench/conv_peak.sh.

Usage: summarize_roofline.py RUNS_TSV CONV_PEAK.json CONV_PEAK_PYTORCH.json MODELS.txt OUT_MD

FLOPs counted: convolutions and fully connected layers only, direct-convolution arithmetic (2 per
multiply-add; Winograd's savings are not subtracted), forward + backward where backward is 2x the
forward (data and weight gradients) except for a layer reading the network input (weight gradient
only, 1x). The usual "3x forward" is shown too. `vdnn models` also counts pooling, ReLU, etc. at
1 FLOP per element: its figure is shown for reference.
"""
import sys

from benchlib import code_block, fmt, median, read_json, read_manifest, spread, vdnn_steady, write_lines
from model_flops import layer_flops


def vdnn_models_gflop(models_txt, model):
    with open(models_txt) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == model:
                return float(parts[3])
    return None


def convolutions_alone(profiled, layers, batch):
    """Seconds the convolutions of one step take at their profiled median rates, and their FLOPs."""
    seconds = flops = 0.0
    for name, v in profiled.items():
        fwd = v["flops_per_image"] * batch
        bwd = fwd * (1 if layers[name]["reads_network_input"] else 2)
        fg, bg = median(v["forward_gflops"]), median(v["backward_gflops"])
        if not fg or not bg:
            return None, None
        seconds += fwd / fg / 1e9 + bwd / bg / 1e9
        flops += fwd + bwd
    return seconds, flops


def main(argv) -> int:
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    rows = read_manifest(argv[1])
    peak = read_json(argv[2])
    try:
        torch_runs = read_json(argv[3])
    except (OSError, ValueError):
        torch_runs = []
    model, batch = rows[0]["model"], int(rows[0]["batch"])
    iters, warmup = int(rows[0]["iterations"]), int(rows[0]["warmup"])
    steps, failures = [], []
    for row in rows:
        if row["rc"] != "0":
            failures.append(f"round {row['round']}: exit {row['rc']}")
            continue
        steady, _, _ = vdnn_steady(row["file"], batch, iters, warmup)
        steps.append(batch / steady)

    layers = layer_flops(model)
    forward = sum(v["flops"] for v in layers.values()) * batch
    backward = sum(v["flops"] * (1 if v["reads_network_input"] else 2) for v in layers.values()) * batch
    step_flops = forward + backward
    step_s = median(steps)
    achieved = step_flops / step_s / 1e9 if step_s else None
    best = peak["best_gflops"]
    torch_best = median([r["best_gflops"] for r in torch_runs])
    all_layers = vdnn_models_gflop(argv[4], model)

    out = [f"## Case 7: roofline, {model} training step, batch {batch}", ""]
    w = out.append
    w(__doc__.split("\n\n")[2].replace("\n", " "))
    w("")
    med, rng, n = spread([s * 1e3 for s in steps], "{:,.1f}")
    w("| figure | value |")
    w("| --- | ---: |")
    w(f"| forward FLOPs per step (conv + FC) | {forward / 1e9:,.2f} GFLOP |")
    w(f"| training step FLOPs (forward + backward, as counted above) | {step_flops / 1e9:,.2f} GFLOP |")
    w(f"| the same as 3 × forward | {3 * forward / 1e9:,.2f} GFLOP |")
    if all_layers is not None:
        w(f"| `vdnn models` forward, all layers | {all_layers * batch:,.2f} GFLOP |")
    w(f"| step time, vdnn steady state (median, min – max, n) | {med} ms ({rng}, n={n}) |")
    w(f"| achieved | {fmt(achieved, '{:,.1f}')} GFLOP/s |")
    b = peak["best"]
    w(f"| best convolution, `vdnn profile` (median over {len(peak['runs'])} run(s) of each run's best; "
      f"best run: {b['layer']} {b['pass']}, {b['algorithm']}) | {best:,.1f} GFLOP/s |")
    direct = peak.get("best_direct_gflops")
    if direct:
        w(f"| best convolution with the direct algorithm only (arithmetic that really runs) | {direct:,.1f} GFLOP/s |")
    if torch_best is not None:
        w(f"| best forward convolution, oneDNN in PyTorch {torch_runs[0]['torch_version']} "
          f"(median over {len(torch_runs)} run(s)) | {torch_best:,.1f} GFLOP/s |")
    w(f"| **share of the best convolution (vdnn profile)** | **{fmt(achieved / best if achieved else None, '{:.0%}')}** |")
    if direct:
        w(f"| share of the best direct convolution | {fmt(achieved / direct if achieved else None, '{:.0%}')} |")
    if torch_best:
        w(f"| share of PyTorch's oneDNN best | {fmt(achieved / torch_best if achieved else None, '{:.0%}')} |")
    conv_s, conv_flops = convolutions_alone(peak["layers"], layers, batch)
    if conv_s and step_s:
        w(f"| the convolutions alone at their profiled rates (per layer below, summed) | {conv_s * 1e3:,.1f} ms, "
          f"{conv_s / step_s:.0%} of the step |")
        w(f"| their own rate (their FLOPs over that time) | {conv_flops / conv_s / 1e9:,.1f} GFLOP/s |")
        w(f"| share of the convolutions' own rate | {fmt(achieved / (conv_flops / conv_s / 1e9) if achieved else None, '{:.0%}')} |")
    w("")
    w("Per convolution (`vdnn profile`, fastest algorithm; effective GFLOP/s, median over runs):")
    w("")
    w("| layer | input C×H×W | GFLOP per step (fwd) | forward GFLOP/s | backward GFLOP/s | algorithm (fwd) |")
    w("| --- | --- | ---: | ---: | ---: | --- |")
    for name, v in peak["layers"].items():
        shape = "×".join(str(d) for d in layers[name]["input"])
        w(f"| {name} | {shape} | {v['flops_per_image'] * batch / 1e9:,.2f} | "
          f"{fmt(median(v['forward_gflops']), '{:,.1f}')} | {fmt(median(v['backward_gflops']), '{:,.1f}')} | "
          f"{v['algorithm']} |")
    out.extend(f"- FAILED: {f}" for f in failures)
    w("")
    w("Commands:")
    w("")
    w(code_block([rows[0]["command"],
                  f"OMP_NUM_THREADS=2 build/vdnn profile --model {model} --batch {batch} --json"]))
    w("")
    write_lines(argv[5], out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
