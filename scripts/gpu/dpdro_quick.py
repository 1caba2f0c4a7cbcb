"""Paper 004 at the quick scale on one GPU (issue #37): every private method at each epsilon,
its noiseless clipped control and SCDRO on MNIST-ST and Fashion-MNIST-ST (SmallCNN, seeds
batched), one CSV row per run with the final Phi, ||grad_x Phi||, test accuracy and AUC beside
Phi at the run's initialisation and the class prior's Phi (on the same training rows).

Rows are appended as each fit ends; a fit still running when ``--budget-s`` is spent is stopped
after its current step and recorded as ``stopped``. Hyper-parameters are those of
papers/dpdro/experiments.yaml (table3), with ``--epochs``.

    DPMINIMAX_DATA=<data dir> python scripts/gpu/dpdro_quick.py --out dpdro_quick.csv
    # CPU check: --device cpu --epochs 0.02 --max-rows 600 --seeds 0
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from pathlib import Path

import numpy as np
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.data import load_dataset
from dpminimax.experiments import load_experiments
from dpminimax.metrics.imbalanced import imbalanced_report, reference_objectives

PRIVATE = ("dp_sgda_dro", "privatediff_dro", "dp_double_spider", "dp_recursive_spider")
EXPERIMENTS = Path(__file__).resolve().parents[2] / "papers" / "dpdro" / "experiments.yaml"
FIELDS = ("dataset", "method", "epsilon", "seed", "tag", "status", "seconds", "noise_multiplier",
          "phi_final", "grad_norm_final", "test_accuracy", "test_auc", "phi_init", "phi_prior",
          "below_init_and_prior", "note")


class OutOfTime(Exception):
    """The wall-time budget was spent during a fit."""


def jobs(epsilons, methods, kinds, overrides):
    """(method, epsilon, table3 params with ``overrides``) in the order they run: each private
    method of ``methods`` at each epsilon, then its control (``kinds`` picks among "private"
    and "control"), then SCDRO when ``methods`` names it."""
    table3 = load_experiments(EXPERIMENTS)["experiments"]["table3"]["methods"]

    def params(name):
        return {**table3[name]["params"], **overrides}
    for name in (m for m in PRIVATE if m in methods):
        if "private" in kinds:
            for eps in epsilons:
                yield name, eps, params(name)
        if "control" in kinds:
            yield f"{name}_control", math.inf, params(name)
    if "scdro" in methods:
        yield "scdro", math.inf, dict(table3["scdro"]["params"])


def override(text: str) -> tuple[str, float | int]:
    """``key=value`` of ``--set`` (a number; an integer where it reads as one)."""
    key, _, value = text.partition("=")
    return key, int(value) if value.lstrip("-").isdigit() else float(value)


def fit_rows(data, name, eps, params, seeds, device, deadline, delta):
    """One batched fit of ``seeds``: its CSV rows."""
    method = get_method(name)
    runs = [RunSpec(seed, eps, delta, params) for seed in seeds]

    def monitor(step, model, state):
        if time.monotonic() > deadline:
            raise OutOfTime

    start = time.monotonic()
    base = {"dataset": data.name, "method": name, "epsilon": eps}
    try:
        fit = method.fit(data, runs, device, monitor)
    except OutOfTime:
        return [{**base, "seed": s, "status": "stopped", "note": "wall-time budget"}
                for s in seeds]
    except ValueError as err:  # e.g. the feedback check refuses the configuration
        return [{**base, "seed": s, "status": "refused", "note": str(err)} for s in seeds]
    seconds = time.monotonic() - start
    first = fit.resolved_params[0]
    initial, prior = reference_objectives(fit.model, data, device, seeds,
                                          rows=int(first["curve_rows"]),
                                          lam0=float(first["lam0"]), rho=float(first["rho"]))
    logits = fit.model.logits(fit.state, torch.as_tensor(data.x_test, device=device))
    rows = []
    for r, seed in enumerate(seeds):
        report = imbalanced_report(np.asarray(data.y_test), logits[r].cpu().numpy())
        phi = fit.counters[r]["dro_objective"]
        rows.append({**base, "seed": seed, "status": "done", "seconds": round(seconds, 1),
                     "noise_multiplier": fit.resolved_params[r].get("noise_multiplier", 0.0),
                     "phi_final": phi, "grad_norm_final": fit.counters[r]["dro_gradient_norm"],
                     "test_accuracy": report["test_accuracy"], "test_auc": report["test_auc"],
                     "phi_init": float(initial[r]), "phi_prior": prior,
                     "below_init_and_prior": bool(phi < min(float(initial[r]), prior))})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("dpdro_quick.csv"))
    parser.add_argument("--datasets", nargs="+", default=["mnist-st", "fashion-mnist-st"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=float, default=5.0)
    parser.add_argument("--budget-s", type=float, default=330.0,
                        help="wall time after which the running fit stops and none starts")
    parser.add_argument("--max-rows", type=int, default=None, help="subsample each split")
    parser.add_argument("--delta", type=float, default=1.036e-5)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--methods", nargs="+", default=[*PRIVATE, "scdro"])
    parser.add_argument("--kinds", nargs="+", default=["private", "control"])
    parser.add_argument("--set", nargs="*", type=override, default=[], metavar="KEY=VALUE",
                        help="parameters replacing table3's for every method (a tuning probe)")
    parser.add_argument("--tag", default="table3", help="the rows' tag (names a probe)")
    parser.add_argument("--curve-rows", type=int, default=4096,
                        help="training rows on which Phi and its gradient are measured")
    args = parser.parse_args()
    deadline = time.monotonic() + args.budget_s
    device = torch.device(args.device)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as stream:
        writer = csv.DictWriter(stream, FIELDS)
        writer.writeheader()
        for dataset in args.datasets:
            data = load_dataset(dataset, max_rows=args.max_rows)
            for name, eps, params in jobs(args.epsilons, args.methods, args.kinds,
                                          dict(args.set)):
                if time.monotonic() > deadline:
                    rows = [{"dataset": dataset, "method": name, "epsilon": eps, "seed": s,
                             "status": "not started", "note": "wall-time budget"}
                            for s in args.seeds]
                else:
                    params.update(epochs=args.epochs, eval_every=10**9,
                                  curve_rows=args.curve_rows)
                    rows = fit_rows(data, name, eps, params, args.seeds, device, deadline,
                                    args.delta)
                rows = [{**row, "tag": args.tag} for row in rows]
                writer.writerows(rows)
                stream.flush()
                for row in rows:
                    print(", ".join(f"{k}={row[k]}" for k in FIELDS if k in row), flush=True)


if __name__ == "__main__":
    main()
