#!/usr/bin/env python3
"""Markdown for case 5 (bench/memory.sh): bytes held for backward, vdnn (none / conv / all) against
the bytes PyTorch's autograd saves, per network, with ratios to PyTorch.

Usage: summarize_memory.py RUNS_TSV OUT_MD
"""
import sys
from collections import OrderedDict

from benchlib import code_block, read_json, read_last_json_line, read_manifest, write_lines

MIB = 2 ** 20


def mib(b):
    return "—" if b is None else f"{b / MIB:,.2f}"


def share(a, b):
    if a is None or not b:
        return "—"
    r = a / b
    return f"{r:.2%}" if r < 0.01 else f"{r:.1%}" if r < 0.1 else f"{r:.0%}"


def held(report):
    """Feature-map bytes the plan keeps allocated when the forward pass ends (None if unknown)."""
    return report.get("at_forward_end_by_class", {}).get("feature_maps") if report else None


def main(argv) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    nets = OrderedDict()   # (model, batch) -> {"vdnn": {policy: report}, "torch": {label: result}}
    commands, failures = [], []
    for row in read_manifest(argv[1]):
        net = nets.setdefault((row["model"], row["batch"]), {"vdnn": {}, "torch": OrderedDict()})
        if row["model"] == next(iter(nets))[0]:
            commands.append(row["command"])
        if row["rc"] != "0":
            failures.append(f"{row['model']} b{row['batch']}, {row['variant']}: exit {row['rc']}")
            continue
        try:
            if row["kind"] == "vdnn":
                net["vdnn"][row["variant"].split()[-1]] = read_json(row["file"])
            else:
                net["torch"][row["variant"]] = read_last_json_line(row["file"])
        except (OSError, ValueError, IndexError) as e:
            failures.append(f"{row['model']} b{row['batch']}, {row['variant']}: unreadable ({e})")

    out = ["## Case 5: memory held for backward per step", ""]
    w = out.append
    w("**vdnn**: the planned peak of the `feature_maps` memory class (`peak_by_class.feature_maps` "
      "of `vdnn train --iterations 1 --report`): every layer output, saved state (batch-norm "
      "statistics, max-pool argmax, dropout mask, softmax probabilities) and the input batch that "
      "is on the device, in oneDNN's blocked layouts; the executor runs this plan byte for byte. "
      "Under `none` its peak is at the end of the forward pass, so it is what is kept for backward "
      "(plus the loss layer's transient output). Under `conv` / `all` the same class is what stays "
      "device-resident while the rest is offloaded (`host` = host memory for offloaded tensors). "
      "**PyTorch**: the bytes autograd saves for backward during forward + loss "
      "(`torch.autograd.graph.saved_tensors_hooks`, each storage counted once by its data "
      "pointer), without the parameters it saves (conv/FC weights: vdnn counts those in its "
      "`weights` class); the input batch is included in both. Percentages are of PyTorch's figure.")
    w("")
    w("Two vdnn figures per policy: the **peak** (as above; it includes the working set of the "
      "layer running at the time, e.g. a convolution's input and output, which PyTorch's saved "
      "bytes do not) and what is **held at the end of the forward pass** "
      "(`at_forward_end_by_class.feature_maps`: the feature-map bytes the plan keeps allocated "
      "when the loss is ready, i.e. what the device holds across the forward/backward boundary; "
      "a tensor whose offload copy has been issued counts as released, because the plan reuses "
      "its bytes once that copy ends). The second is the one comparable with PyTorch's figure.")
    w("")
    torch_labels = list(OrderedDict.fromkeys(t for n in nets.values() for t in n["torch"]))
    head = ["network, batch"] + [f"{t}, MiB" for t in torch_labels] + [
        "vdnn none peak, MiB", "vdnn conv peak, MiB (host)", "vdnn all peak, MiB (host)",
        "none at forward end", "conv at forward end", "all at forward end"]
    w("| " + " | ".join(head) + " |")
    w("| --- |" + " ---: |" * (len(head) - 1))
    for (model, batch), n in nets.items():
        cells = [mib(n["torch"].get(t, {}).get("saved_bytes_without_parameters"))
                 for t in torch_labels]
        for policy in ("none", "conv", "all"):
            r = n["vdnn"].get(policy)
            fm = r["peak_by_class"]["feature_maps"] if r else None
            cells.append(mib(fm) + (f" ({mib(r['host_bytes'])})" if r and policy != "none" else ""))
        cells += [mib(held(n["vdnn"].get(policy))) for policy in ("none", "conv", "all")]
        w(f"| {model.replace('@', ' at ')}, {batch} | " + " | ".join(cells) + " |")
    if torch_labels:
        w("")
        ref = torch_labels[0]
        w(f"vdnn as a share of {ref} (target: none ≤ 100%, all ≤ 20%):")
        w("")
        w("| network, batch | peak: none | conv | all | held at forward end: none | conv | all "
          "| PyTorch incl. parameters, MiB | vdnn peak device (none), MiB |")
        w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for (model, batch), n in nets.items():
            t = n["torch"].get(ref, {})
            base = t.get("saved_bytes_without_parameters")
            cells = [share(n["vdnn"][p]["peak_by_class"]["feature_maps"], base)
                     if p in n["vdnn"] else "—" for p in ("none", "conv", "all")]
            cells += [share(held(n["vdnn"].get(p)), base) for p in ("none", "conv", "all")]
            none = n["vdnn"].get("none")
            cells += [mib(t.get("saved_bytes")), mib(none["peak_device_bytes"] if none else None)]
            w(f"| {model.replace('@', ' at ')}, {batch} | " + " | ".join(cells) + " |")
    out.extend(f"- FAILED: {f}" for f in failures)
    w("")
    w("Commands (first network; the others differ in --model/--batch/--input):")
    w("")
    w(code_block(commands))
    w("")
    write_lines(argv[2], out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
