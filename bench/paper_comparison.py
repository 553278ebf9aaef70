#!/usr/bin/env python3
"""Prints the tables of docs/paper-comparison.md: vdnn's predicted device memory and step time
for the vDNN paper's networks on the paper's GPU profile (Titan X Maxwell, PCIe gen3), and the
paper's experiment with cuDNN 4's algorithms (profile titan-x-maxwell-cudnn4) beside the full set.

    python3 bench/paper_comparison.py [build/vdnn]
"""
import json
import subprocess
import sys

VDNN = sys.argv[1] if len(sys.argv) > 1 else "build/vdnn"
GIB = 2 ** 30


def plan(model, batch, budget, device="titan-x-maxwell"):
    out = subprocess.run([VDNN, "plan", "--model", model, "--batch", str(batch), "--device", device,
                          "--device-memory", budget, "--json"], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(out.stderr)
    j = json.loads(out.stdout)
    return j, {r["configuration"].split(" ")[0] if not r["configuration"].startswith("dyn") else "dyn": r
               for r in j["configurations"]}


print("| network | batch | none peak (lean / fast algos) | all peak | average none → all | average reduction |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for model in ["alexnet", "overfeat", "googlenet", "vgg16"]:
    for batch in [128, 256]:
        _, r = plan(model, batch, "1TiB")
        nl, nf, al = r["none+leanest"], r["none+fastest"], r["all+fastest"]
        red = 1 - al["average_bytes"] / nf["average_bytes"]
        print(f"| {model} | {batch} | {nl['peak_bytes']/GIB:.2f} / {nf['peak_bytes']/GIB:.2f} GiB | "
              f"{al['peak_bytes']/GIB:.2f} GiB | {nf['average_bytes']/GIB:.2f} → {al['average_bytes']/GIB:.2f} GiB | "
              f"{red*100:.0f}% |")

print()
print("| VGG-16, batch 256, Titan X 12 GiB | min budget | fits 12 GiB | predicted step | vs oracle |")
print("| --- | ---: | :---: | ---: | ---: |")
j, r = plan("vgg16", 256, "12GiB")
for name, row in r.items():
    print(f"| {row['configuration']} | {row['minimum_budget']/GIB:.2f} GiB | {'yes' if row['fits'] else 'no'} | "
          f"{row['iteration_seconds']*1e3:.0f} ms | {row['overhead_vs_oracle']*100:+.0f}% |")
print()
print("dyn:", j["dyn"]["why"])

print()
print("| network | batch | algorithms | oracle | vDNN_conv (fastest) | vDNN_all (fastest) | vDNN_dyn | dyn loss |")
print("| --- | ---: | --- | ---: | ---: | ---: | --- | ---: |")
for model, batch in [("alexnet", 128), ("overfeat", 128), ("googlenet", 128), ("vgg16", 128), ("vgg16", 256)]:
    for device, label in [("titan-x-maxwell-cudnn4", "cuDNN 4"), ("titan-x-maxwell", "all six")]:
        j, r = plan(model, batch, "12GiB", device)

        def step(row):
            return f"{row['iteration_seconds']*1e3:.0f} ms" + ("" if row["fits"] else " (does not fit)")

        d = r["dyn"]
        print(f"| {model} | {batch} | {label} | {j['oracle_seconds']*1e3:.0f} ms | {step(r['conv+fastest'])} | "
              f"{step(r['all+fastest'])} | {d['configuration'][5:]}: {step(d)} | "
              f"{d['overhead_vs_oracle']*100:+.0f}% |")
