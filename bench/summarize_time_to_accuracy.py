#!/usr/bin/env python3
"""Markdown for case 4 (bench/time_to_accuracy.sh): wall time to the target test accuracy per
framework, median and min – max over the rounds, the epochs it took, and PyTorch / vdnn time ratios.

Usage: summarize_time_to_accuracy.py RUNS_TSV OUT_MD TARGET EPOCHS
"""
import sys
from collections import OrderedDict

from benchlib import code_block, median, ratio_cell, read_last_json_line, read_manifest, spread, write_lines


def main(argv) -> int:
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    rows, target, epochs_cap = read_manifest(argv[1]), float(argv[3]), argv[4]
    runs = OrderedDict()     # variant -> {round: result dict}
    commands, failures = OrderedDict(), []
    for row in rows:
        commands.setdefault(row["variant"], row["command"])
        try:
            r = read_last_json_line(row["file"])
        except (OSError, ValueError, IndexError) as e:
            failures.append(f"round {row['round']}, {row['variant']}: no result ({e})")
            continue
        runs.setdefault(row["variant"], {})[int(row["round"])] = r
    vdnn = next((v for v in runs if v == "vdnn"), None)

    out = [f"## Case 4: time to {target:.0%} test accuracy on Fashion-MNIST", ""]
    w = out.append
    w(f"Same recipe in both: fmnist_cnn, batch 128, SGD lr 0.05 with a cosine schedule over "
      f"{epochs_cap} epoch(s) (stepped per batch), momentum 0.9, weight decay 5e-4 on conv/FC "
      "weights, vdnn's initialization (He-normal conv, LeCun-normal FC), per-epoch reshuffle, last "
      "partial batch dropped, test accuracy on the 10,000 test images after every epoch. Time is "
      "wall-clock from process start (loading the data and, for PyTorch, importing torch "
      "included) until the end of the evaluation of the first epoch that reaches the target; the "
      f"run is then stopped. Runs capped at {epochs_cap} epoch(s); 'not reached' if none got there. "
      "Variants interleaved per round, fresh processes.")
    w("")
    w("| run | seconds to target, median | min – max | reached | epochs needed (median) |")
    w("| --- | ---: | ---: | ---: | ---: |")
    for variant, rounds in runs.items():
        secs = [r["seconds"] for r in rounds.values() if r.get("reached")]
        med, rng, n = spread(secs, "{:,.1f}")
        ep = median([r["epoch"] for r in rounds.values() if r.get("reached")])
        if not secs:
            med = "not reached"
        w(f"| {variant} | {med} | {rng} | {n}/{len(rounds)} | {ep if ep is not None else '—'} |")
    if vdnn:
        w("")
        w("| PyTorch time / vdnn time (median of per-round ratios; above 1: vdnn faster) | ratio |")
        w("| --- | ---: |")
        for variant, rounds in runs.items():
            if variant == vdnn:
                continue
            pairs = [(r["seconds"], runs[vdnn][k]["seconds"]) for k, r in rounds.items()
                     if r.get("reached") and runs[vdnn].get(k, {}).get("reached")]
            w(f"| {variant} | {ratio_cell(pairs)} |")
    w("")
    w("Per round: test accuracy after each epoch (seconds since start):")
    w("")
    for variant, rounds in runs.items():
        for k, r in rounds.items():
            trail = ", ".join(f"{e['test_accuracy']:.2%} ({e['seconds']:.0f} s)" for e in r["epochs"])
            w(f"- round {k}, {variant}: {trail or 'no epoch finished'}"
              f"{'' if r.get('reached') else ' — not reached'}")
    out.extend(f"- FAILED: {f}" for f in failures)
    w("")
    w("Commands (each run under `bench/watch_accuracy.py --target "
      f"{target}`, which stops it at the target):")
    w("")
    w(code_block(commands.values()))
    w("")
    write_lines(argv[2], out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
