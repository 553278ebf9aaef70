"""The wall time of a Python train_step under mpirun: the median and 10th percentile over STEPS
steps after 10 warm-up steps, printed by rank 0. Issue 42 measured with it what the per-step
agreement of the ranks (comm/rank_agreement.h) costs, running main's build and the branch's
alternately (PYTHONPATH=<build>/python); docs/design/data-parallel.md quotes the figures.

  mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -x PYTHONPATH \\
      python3 scripts/step_time.py LABEL MODEL BATCH STEPS     # MODEL "mlp": a 1x4x4 two-layer MLP
"""
import json
import sys
import tempfile
import time

import numpy as np

import vdnn

label, model, batch, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if model == "mlp":  # so small a step that the collectives around it show
    model = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False).name
    with open(model, "w") as f:
        json.dump({"name": "mlp", "input": [1, 4, 4], "classes": 3,
                   "layers": [{"name": "fc1", "type": "fc", "units": 8}, {"name": "relu1", "type": "relu"},
                              {"name": "fc2", "type": "fc", "units": "classes"},
                              {"name": "loss", "type": "softmax_cross_entropy"}]}, f)
net = vdnn.Net(model, batch=batch, seed=3)
x = np.random.default_rng(vdnn.rank()).standard_normal((batch, *vdnn.load_model(model).input)).astype(np.float32)
y = np.zeros(batch, int)
for _ in range(10):
    net.train_step(x, y, 0.01)
times = []
for _ in range(steps):
    start = time.perf_counter()
    net.train_step(x, y, 0.01)
    times.append(time.perf_counter() - start)
times.sort()
if vdnn.rank() == 0:
    print(f"{label} {sys.argv[2]} batch {batch}: median {1e3 * times[steps // 2]:.3f} ms, "
          f"p10 {1e3 * times[steps // 10]:.3f} ms per train_step ({steps} steps)")
