"""Shadow models as runs of one batched program (issue #23): the wall time of training 1, 16
and 64 models of DP-SGD at once, for logistic regression on tabular rows and for the small CNN
on 28x28 images.

One model is an ordinary run on half of the pool (what a single shadow trains on); 16 and 64
are shadow runs of one program, each on its own half. Both data sets are random arrays of the
real ones' shapes (Adult's 104 encoded features; MNIST-sized images): the time of a step does
not depend on the values. ``dpminimax bench lira`` prints the seconds and the cost per model
relative to one.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.data import PreparedDataset
from dpminimax.kernels.membership import member_count

#: (pool rows, DP-SGD parameters) of each workload.
WORKLOADS = {
    "logistic_regression": (8000, {"epochs": 10, "batch_size": 256, "lr": 2.0}),
    "small_cnn": (2000, {"epochs": 1, "batch_size": 64, "lr": 0.1, "model": "small_cnn"}),
}


def random_dataset(kind: str, rows: int, seed: int = 0) -> PreparedDataset:
    """Random rows of Adult's width (``tabular``) or 1 x 28 x 28 images (``image``)."""
    rng = np.random.default_rng(seed)
    shape = (rows, 104) if kind == "tabular" else (rows, 1, 28, 28)
    x = rng.normal(size=shape).astype(np.float32)
    y = rng.integers(0, 2, rows)
    s = rng.integers(0, 2, rows)
    return PreparedDataset(name=f"random-{kind}", kind=kind, x_train=x, y_train=y, s_train=s,
                           x_test=x[:10], y_test=y[:10], s_test=s[:10],
                           feature_names=[], label_names=["0", "1"], group_names=["0", "1"])


def fit_seconds(data: PreparedDataset, params: dict, models: int) -> float:
    """Seconds to train ``models`` DP-SGD models at epsilon 1 (1: one ordinary run on half of
    the pool; more: shadow runs of one program)."""
    method = get_method("dp_sgd")
    if models == 1:
        half = replace(data, x_train=data.x_train[:member_count(len(data.y_train))],
                       y_train=data.y_train[:member_count(len(data.y_train))],
                       s_train=data.s_train[:member_count(len(data.y_train))])
        data, runs = half, [RunSpec(0, 1.0, 1e-5, params)]
    else:
        runs = [RunSpec(s, 1.0, 1e-5, params, shadow=s) for s in range(models)]
    start = time.perf_counter()
    method.fit(data, runs, torch.device("cpu"))
    return time.perf_counter() - start


def run_shadow_benchmark(counts: tuple[int, ...] = (1, 16, 64),
                         repeats: int = 3) -> dict[str, float]:
    """Median seconds per workload and model count over ``repeats`` interleaved rounds, and each
    count's time per model over one's."""
    result: dict[str, float] = {"torch_threads": torch.get_num_threads()}
    for workload, (rows, params) in WORKLOADS.items():
        data = random_dataset("tabular" if workload == "logistic_regression" else "image", rows)
        for count in counts:  # warm-up: every path planned once, allocator primed
            fit_seconds(data, params, count)
        rounds = [{count: fit_seconds(data, params, count) for count in counts}
                  for _ in range(repeats)]
        seconds = {count: float(np.median([r[count] for r in rounds])) for count in counts}
        for count, value in seconds.items():
            result[f"{workload}_{count}_models_s"] = round(value, 3)
            result[f"{workload}_{count}_models_per_model_vs_one"] = round(
                value / count / seconds[counts[0]], 3)
    return result
