#!/usr/bin/env python3
"""Emulated links with a GPU's compute-to-link ratio on this machine (issue 8, case 6).

This machine computes convolutions s = (GPU fp32 peak) / (best conv throughput measured here)
times slower than the GPU (profiles/devices/NAME.json: peak_fp32_flops, link), so a step takes s
times longer here. To keep the ratio of copy time to compute time the GPU system has, the emulated
link is made s times slower too: bandwidth_here = link bandwidth / s, latency_here = link latency
* s (profiles/links/LINK.json: bytes_per_second, latency_seconds).

Usage: scaled_link.py CONV_PEAK.json DEVICE... [--markdown OUT.md]
  -> one line per device on stdout: "LABEL=BANDWIDTH_GBPS@LATENCY", e.g.
     titan-x-maxwell/pcie3=0.54@0.24ms      (bench/offload.sh's LINKS format)
"""
import argparse
import json
import os
import sys

PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "profiles")


def load(kind, name):
    with open(os.path.join(PROFILES, kind, name + ".json")) as f:
        return json.load(f)


def scale(device_name, here_flops):
    device = load("devices", device_name)
    link = load("links", device["link"])
    s = device["peak_fp32_flops"] / here_flops
    return {"device": device_name, "link": device["link"], "peak_fp32_flops": device["peak_fp32_flops"],
            "link_bytes_per_second": link["bytes_per_second"], "link_latency_seconds": link["latency_seconds"],
            "slowdown": s, "bandwidth_gbps": link["bytes_per_second"] / s / 1e9,
            "latency_seconds": link["latency_seconds"] * s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("conv_peak", help="bench/results/conv_peak.json (bench/conv_peak.sh)")
    ap.add_argument("devices", nargs="+", help="names in profiles/devices, e.g. titan-x-maxwell h200")
    ap.add_argument("--markdown", help="write how the links were scaled (a markdown paragraph and table)")
    args = ap.parse_args(argv)
    with open(args.conv_peak) as f:
        peak = json.load(f)
    here = peak["best_gflops"] * 1e9
    rows = [scale(d, here) for d in args.devices]
    for r in rows:
        print(f"{r['device']}/{r['link']}={r['bandwidth_gbps']:.4g}@{r['latency_seconds'] * 1e3:.4g}ms")
    if args.markdown:
        lines = [
            "How the links are scaled: a GPU computes s = (its fp32 peak) / (the best convolution "
            f"throughput measured here: {peak['best_gflops']:,.1f} GFLOP/s, `vdnn profile --model "
            f"{peak['model']} --batch {peak['batch']}`, bench/conv_peak.sh) times faster than this "
            "machine, so to give the emulated link the GPU system's compute-to-link ratio, its "
            "bandwidth is divided by s and its per-copy latency multiplied by s (device and link "
            "figures from profiles/). The GPU side is its datasheet fp32 peak (no tensor cores): "
            "a GPU whose convolutions reach a fraction f of it computes f times slower, which "
            "corresponds to a link 1/f times faster here, so these links are the pessimistic end "
            "(copies as slow, relative to compute, as they can be). The figure measured here is "
            "direct-equivalent (Winograd credited with direct arithmetic); with the direct algorithm "
            f"only it is {peak.get('best_direct_gflops', float('nan')):,.1f} GFLOP/s, which would make "
            "the links here that much slower still.",
            "",
            "| device | link (effective) | GPU fp32 peak | s | emulated bandwidth here | emulated latency here |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for r in rows:
            lines.append(
                f"| {r['device']} | {r['link']}: {r['link_bytes_per_second'] / 1e9:g} GB/s, "
                f"{r['link_latency_seconds'] * 1e6:g} µs | {r['peak_fp32_flops'] / 1e12:g} TFLOP/s | "
                f"{r['slowdown']:,.0f} | {r['bandwidth_gbps'] * 1e3:,.1f} MB/s | "
                f"{r['latency_seconds'] * 1e3:,.2f} ms |")
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
