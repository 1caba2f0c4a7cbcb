"""Issue #37's trace of DP Recursive-SPIDER (Alg. 3): per step, the estimates its update reads.

    python scripts/dpdro_alg3_trace.py DATA_DIR EPSILON SEEDS STEPS [PARAMS_JSON]

Trains ``dp_recursive_spider`` (``dp_recursive_spider_control`` at EPSILON inf) on the prepared
dataset with the quick-scale ``table3`` parameters (overridden by PARAMS_JSON), SEEDS batched
(comma-separated), and prints every 10th step: s (before the update; and its minimum so far), the
lambda step's direction z_lam = rho + log s - h / s from the raw estimates (before the projections
of deviation 13, which the update then applies), lambda, the shift m, h, ||v|| and ||x||."""

from __future__ import annotations

import json
import math
import sys

import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import expand_runs
from dpminimax.data import load_prepared

QUICK = {"anchor_batch_size": 1024, "clip": 1.0, "curve_rows": 512, "epochs": 5.0,
         "eval_every": 100_000, "lam_init": 1.0, "lr": 0.1, "lr_lam": 0.01, "period": 10,
         "temperature": 8.0}


def norms(tensors: dict[str, torch.Tensor]) -> list[float]:
    return torch.sqrt(sum((v.flatten(1) ** 2).sum(1) for v in tensors.values())).tolist()


def rounded(values, digits: int = 3) -> list[float]:
    return [round(float(v), digits) for v in values]


def main(data_dir: str, epsilon: str, seeds: str, steps: str, params: str = "{}") -> None:
    eps = float(epsilon)
    method = get_method("dp_recursive_spider" if math.isfinite(eps)
                        else "dp_recursive_spider_control")
    data = load_prepared(data_dir)
    runs = expand_runs([int(s) for s in seeds.split(",")], eps, 1.036e-5,
                       {**QUICK, **json.loads(params)})
    resolved, shared, plans = method.plan_runs(data, runs)
    program = method.program(data, runs, resolved, shared, plans, torch.device("cpu"))
    seen: dict[str, torch.Tensor] = {}
    update = program._update

    def traced_update() -> None:
        s = program.s.clone()
        seen["s"] = s
        seen["z_lam"] = program.rho + torch.log(s.clamp_min(1e-3)) - program.h / s.clamp_min(1e-3)
        seen["s_min"] = torch.minimum(seen.get("s_min", s), s)
        update()

    program._update = traced_update
    for t in range(1, int(steps) + 1):
        program.step()
        if t % 10 == 0:
            print(t, "s", rounded(seen["s"]), "s_min", rounded(seen["s_min"]), "z_lam",
                  rounded(seen["z_lam"], 2), "lam", rounded(program.lam), "shift",
                  rounded(program.shift, 2), "h", rounded(program.h), "|v|",
                  rounded(norms(program.v)), "|x|", rounded(norms(program.params), 2),
                  flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
