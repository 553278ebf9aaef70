#!/usr/bin/env python3
"""The best convolution throughput of `vdnn profile` runs: for every conv layer, its fastest
algorithm's forward and backward time, turned into GFLOP/s with the layer's direct-convolution FLOPs
(bench/model_flops.py; backward = 2x forward: data and weight gradients, 1x for a layer that reads
the network input: no data gradient). Winograd does fewer multiplications than it is credited with,
so these are "effective" (direct-equivalent) GFLOP/s, as the roofline's numerator counts them too.

Usage: conv_peak.py MODEL BATCH PROFILE.json... > conv_peak.json
  -> {"best_gflops": ..., "best_direct_gflops": ..., "best": {"layer", "pass", "algorithm", "gflops"},
      "runs": [best per run],
      "layers": {name: {"forward_gflops": [per run], "backward_gflops": [...], "algorithm": ...}}}
"best_gflops" is the median over the runs of each run's best; "best_direct_gflops" the same over
the direct algorithm only (arithmetic that really runs).
"""
import json
import statistics
import sys

from model_flops import layer_flops


def run_layers(profile, flops, batch, only=None):
    """{layer: (forward GFLOP/s, backward GFLOP/s, fastest-forward algorithm)} of one profile,
    over every algorithm, or only the one named `only` (e.g. "direct")."""
    out = {}
    for node in profile["nodes"]:
        f = flops.get(node["name"])
        algos = [a for a in node["algos"] if only in (None, a["name"])]
        if node["type"] != "conv" or f is None or not algos:
            continue
        fwd = min(algos, key=lambda a: a["forward_seconds"])
        bwd = min(a["backward_seconds"] for a in algos)
        bwd_factor = 1.0 if f["reads_network_input"] else 2.0
        out[node["name"]] = (f["flops"] * batch / fwd["forward_seconds"] / 1e9,
                             bwd_factor * f["flops"] * batch / bwd / 1e9, fwd["name"])
    return out


def main(argv) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    model, batch = argv[1], int(argv[2])
    flops = layer_flops(model)
    layers, runs, direct = {}, [], []
    for path in argv[3:]:
        with open(path) as f:
            profile = json.load(f)
        per_layer = run_layers(profile, flops, batch)
        direct.append(max(max(v[:2]) for v in run_layers(profile, flops, batch, "direct").values()))
        best = None
        for name, (fg, bg, algo) in per_layer.items():
            entry = layers.setdefault(name, {"forward_gflops": [], "backward_gflops": [],
                                             "algorithm": algo, "flops_per_image": flops[name]["flops"]})
            entry["forward_gflops"].append(fg)
            entry["backward_gflops"].append(bg)
            for p, g in (("forward", fg), ("backward", bg)):
                if best is None or g > best["gflops"]:
                    best = {"layer": name, "pass": p, "algorithm": algo, "gflops": g}
        runs.append(best)
    print(json.dumps({"model": model, "batch": batch, "profiles": argv[3:],
                      "best_gflops": statistics.median(r["gflops"] for r in runs),
                      "best": max(runs, key=lambda r: r["gflops"]), "runs": runs,
                      "best_direct_gflops": statistics.median(direct),
                      "layers": layers}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
