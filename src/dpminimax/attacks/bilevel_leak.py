"""The leak of DP bilevel §3 as an attack (spec 002 §3.2) on P-D (Example 3.1): the neighbouring
datasets S+ and S- share xi_1..xi_{n-1} (uniform in the unit ball) and set xi_n = +u or -u,
u = e_1. Mechanisms, each run N times per dataset (one batched program):

* M0: one exact hypergradient at 0, grad F_S(0) = xi_bar (Eq. (1));
* M1: NP-Pen (``np_pen``), x_out -> -xi_bar; M2: the naive outer step (``bilevel_naive_outer``:
  noise for f's data dependence, none here), so M2 = M1;
* M3: Algorithm 1 (``dp_bilevel``) at the run's epsilon.

The attacker's statistic is <x_out, u> (M0: larger on S+; M1-M3 aim at -xi_bar: smaller), read
by the ROC, its AUC and the empirical epsilon lower bound with Clopper-Pearson bounds
(:func:`dpminimax.attacks.lira.epsilon_lower_bound_from_roc`). The reconstruction attack knows
S without xi_n: xi_n = n grad F(0) - sum_{i<n} xi_i (M0), -n x_out - sum_{i<n} xi_i (M1, M2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.dp_bilevel import BILEVEL_DIAGNOSTICS
from dpminimax.attacks.lira import epsilon_lower_bound_from_roc
from dpminimax.metrics.classification import roc_auc
from dpminimax.problems import FixedSample, LeakExample
from dpminimax.problems.bilevel import ball
from dpminimax.seeding import make_generator

PROBLEM = "pd_leak_example"
#: The method each trained mechanism runs (M0 is one exact hypergradient, no method).
MECHANISMS = {"M1": "np_pen", "M2": "bilevel_naive_outer", "M3": "dp_bilevel"}
#: The target M2 is calibrated to (its record says epsilon inf: the inner solutions are exact).
NAIVE_TARGET = 1.0
#: Which way each mechanism's output moves with xi_n (M0 returns +xi_bar, the rest -xi_bar).
SIGNS = {"M0": 1.0, "M1": -1.0, "M2": -1.0, "M3": -1.0}


def neighbours(d: int, n: int, seed: int) -> tuple[FixedSample, FixedSample]:
    """S+ and S-: n - 1 shared points uniform in the unit ball, then xi_n = +e_1 / -e_1."""
    base = ball(n - 1, d, make_generator(seed, "attack_base"), torch.float64)
    target = torch.zeros(1, d, dtype=torch.float64)
    target[0, 0] = 1.0
    return (FixedSample({"xi": torch.cat([base, target])}),
            FixedSample({"xi": torch.cat([base, -target])}))


def outputs(mechanism: str, sample: FixedSample, seeds: Sequence[int], epsilon: float,
            delta: float, params: Mapping[str, Any]) -> torch.Tensor:
    """Each run's output (N, d) of ``mechanism`` on ``sample`` (M0: grad F_S(0); M1-M3: x_out
    of the method fitted with ``params`` on P-D at ``epsilon``, one run per seed)."""
    d = sample.examples["xi"].shape[1]
    if mechanism == "M0":
        problem = LeakExample(d)
        stats = problem.statistics({"xi": sample.examples["xi"].unsqueeze(0)})
        return problem.hypergradient(torch.zeros(1, d, dtype=torch.float64), stats).expand(
            len(seeds), d)
    name = MECHANISMS[mechanism]
    method = BILEVEL_DIAGNOSTICS[name]() if name in BILEVEL_DIAGNOSTICS else get_method(name)
    grid = {"problem": PROBLEM, "d_x": d, "d_y": d, **params}
    runs = [RunSpec(seed, epsilon, delta, grid) for seed in seeds]
    return method.fit(sample, runs, torch.device("cpu")).state["x"]


def distinguish(plus: torch.Tensor, minus: torch.Tensor, sign: float,
                delta: float) -> dict[str, float]:
    """AUC and the empirical epsilon lower bound of the test "S+" on sign <x_out, e_1>."""
    scores = sign * torch.cat([plus[:, 0], minus[:, 0]]).numpy()
    labels = np.concatenate([np.ones(len(plus), bool), np.zeros(len(minus), bool)])
    return {"auc": float(roc_auc(scores, labels)),
            "epsilon_hat": epsilon_lower_bound_from_roc(scores, labels, delta)}


def reconstruct(mechanism: str, output: torch.Tensor, sample: FixedSample) -> torch.Tensor:
    """xi_n from one output (d,) and xi_1..xi_{n-1} (M0 and the penalty methods M1, M2)."""
    xi = sample.examples["xi"]
    return SIGNS[mechanism] * len(xi) * output - xi[:-1].sum(0)


def leak_table(d: int, n: int, runs: int, epsilons: Sequence[float], delta: float,
               seed: int = 0, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per mechanism (and per epsilon for M3): AUC, epsilon_hat and, for M0-M2, the
    reconstruction error ||xi_n_hat - xi_n|| (largest over runs and both datasets)."""
    params = dict(params or {})
    plus, minus = neighbours(d, n, seed)
    seeds_plus, seeds_minus = range(runs), range(runs, 2 * runs)
    cases = [("M0", math.inf), ("M1", math.inf), ("M2", NAIVE_TARGET),
             *(("M3", epsilon) for epsilon in epsilons)]
    rows = []
    for mechanism, target in cases:
        out_plus = outputs(mechanism, plus, seeds_plus, target, delta, params)
        out_minus = outputs(mechanism, minus, seeds_minus, target, delta, params)
        row = {"mechanism": mechanism, "epsilon": target if mechanism == "M3" else math.inf,
               "d": d, "n": n, "runs": runs,
               **distinguish(out_plus, out_minus, SIGNS[mechanism], delta)}
        if mechanism != "M3":
            row["reconstruction_error"] = max(
                float(torch.linalg.vector_norm(
                    reconstruct(mechanism, out, sample) - sample.examples["xi"][-1], dim=-1
                ).max()) for out, sample in ((out_plus, plus), (out_minus, minus)))
        rows.append(row)
    return rows
