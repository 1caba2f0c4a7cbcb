"""The one-run audit's power and validity over seeds (issue 42): for one method of a paper's
``audit:`` block, eps_lower of the real method and of each near-claim control (noise / 2,
noise / 4) at seeds 0..S-1, and the rate at which each is detected (eps_lower above the claim).

    PYTHONPATH=src python scripts/audit_power.py results/data/adult --method dp_sgd --seeds 10
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import pandas as pd

from dpminimax.attacks.bugs import NEAR_CLAIM_BUGS
from dpminimax.attacks.canaries import audit_method
from dpminimax.data.storage import load_prepared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="a prepared dataset directory")
    parser.add_argument("--method", default="dp_sgd")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--max-rows", type=int, default=5000)
    parser.add_argument("--canaries", type=int, default=500)
    parser.add_argument("--norm", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--out", help="CSV of every run")
    args = parser.parse_args()
    data = load_prepared(args.data)
    rows = args.max_rows
    data = replace(data, x_train=data.x_train[:rows], y_train=data.y_train[:rows],
                   s_train=data.s_train[:rows])
    table = pd.DataFrame([
        audit_method(args.method, data, {"epochs": args.epochs}, args.epsilon, args.delta,
                     canaries=args.canaries, norm=args.norm, seed=seed, bug=bug)
        for seed in range(args.seeds) for bug in (None, *NEAR_CLAIM_BUGS)])
    if args.out:
        table.to_csv(args.out, index=False)
    summary = table.groupby("bug").agg(
        epsilon_true=("epsilon_true", "first"), detected=("detected", "mean"),
        eps_lower_min=("epsilon_lower", "min"), eps_lower_median=("epsilon_lower", "median"),
        eps_lower_max=("epsilon_lower", "max"))
    print(summary.to_string())


if __name__ == "__main__":
    main()
