"""The Markov-stopping audit (BYOA E9, issue 36): the iterations Markov stopping plans, the
ratios ||z - z*||_w / r it records at the stop and at the audit levels, on a solver whose
error is known exactly; Xiao and Zhang's Prox-SVRG (the randomized solver audited) and its
rate; and the audit table on ratios of a known distribution."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.minimax.output_perturbation import output_target
from dpminimax.problems import get_problem
from dpminimax.report.minimax.accuracy_audit import markov_ratio_table
from dpminimax.seeding import make_generator
from dpminimax.solvers import AUDIT_LEVELS, SOLVERS, Solver, solve_runs
from dpminimax.solvers.base import distance_potential
from dpminimax.solvers.minimization import prox_svrg_epoch, prox_svrg_rate

CPU = torch.device("cpu")
DELTA = 1e-7
RHO = 0.5


def _known(subproblem, start):
    """A solver whose t-th iterate is z* + sqrt(RHO^t Phi_0) e_1: its squared error is exactly
    the bound Markov stopping plans with (rate RHO, the distance potential Phi_0)."""
    potential = distance_potential(subproblem, start)
    unit = torch.zeros_like(start["x"])
    unit[:, 0] = 1.0
    t = 0
    while True:
        point = {"x": subproblem.exact["x"] + (RHO ** t * potential).sqrt().unsqueeze(1) * unit}
        if subproblem.certify(point, point):
            return subproblem.solution
        t += 1


def test_markov_stop_and_audit_levels_on_a_solver_with_a_known_error(monkeypatch):
    """Known answer: the planned stop is the first t with RHO^t Phi_0 <= (delta / 4)^2 r^2
    (Alg. 1's route: Jensen then Markov), so the ratio there is in ((delta / 4) sqrt(RHO),
    delta / 4]; at each audit level p likewise in (p sqrt(RHO), p]; the first iteration
    meeting the condition is the first t with RHO^t Phi_0 <= r^2."""
    monkeypatch.setitem(SOLVERS, "known", Solver(_known, False, lambda subproblem: torch.full(
        (subproblem.runs, 1), RHO, dtype=subproblem.radii.dtype)))
    problem = get_problem("p1_least_squares", seed=0, d=10)
    n, runs = 64, 3
    samples = [problem.sample(n, make_generator(seed, "data")) for seed in range(runs)]
    target = output_target(problem, n)
    solved = solve_runs("known", problem, samples, [None] * runs, [target] * runs,
                        [make_generator(seed, "solver") for seed in range(runs)],
                        stopping="markov", delta=DELTA)
    potential = problem.blocks[0].radius ** 2   # started at 0: (||0|| + R)^2
    for audited in solved:
        failure = DELTA / 4.0
        assert failure * math.sqrt(RHO) < audited.ratio <= failure * (1 + 1e-9)
        assert audited.planned == math.ceil(
            math.log(potential / (failure * target.radius) ** 2) / -math.log(RHO))
        for level, p in AUDIT_LEVELS.items():
            assert p * math.sqrt(RHO) < audited.probes[level] <= p * (1 + 1e-9)
        assert audited.met == math.ceil(math.log(potential / target.radius ** 2) / -math.log(RHO))
        assert audited.meets_target


def test_prox_svrg_rate_is_xiao_zhang_theorem_3_1():
    """rho = 1 / (mu eta (1 - 4 l eta) m) + 4 l eta (m + 1) / ((1 - 4 l eta) m) at eta =
    1 / (20 l), m = max(n, ceil(50 l / mu)): for P1 (l = 1.1, mu = 0.1, kappa = 11) and n = 64,
    m = 550 and rho = 25 kappa / m + (m + 1) / (4 m) < 3/4 + 1 / (4 m)."""
    from dpminimax.solvers.base import Subproblem, Target

    problem = get_problem("p1_least_squares", seed=0, d=10)
    examples = {k: v.unsqueeze(0) for k, v in problem.sample(64, make_generator(0, "d")).items()}
    subproblem = Subproblem(problem, examples, [None], [Target(1.0)],
                            [make_generator(0, "s")], budget=10 ** 9)
    m = int(prox_svrg_epoch(subproblem)[0])
    assert m == 550
    rho = float(prox_svrg_rate(subproblem)[0, 0])
    assert rho == pytest.approx(25 * 11 / 550 + 551 / (4 * 550), rel=1e-12)
    assert rho < 0.75 + 1 / (4 * m)


def test_markov_stopped_prox_svrg_meets_its_levels():
    """Alg. 2 on P1 with Prox-SVRG stopped by Markov's inequality in every phase: no call
    misses, each run's largest ratio at audit level p is within the union bound of its 8 calls,
    and the condition held no later than the planned stop."""
    method = get_method("phased_output_perturbation")
    runs = [RunSpec(seed, 0.5, DELTA, {"problem": "p1_convex_least_squares", "n": 256,
                                       "solver": "prox_svrg", "stopping": "markov"})
            for seed in range(4)]
    fit = method.fit(None, runs, CPU)
    for counters in fit.counters:
        assert counters["solver_calls"] == 8
        assert counters["accuracy_violations"] == 0
        assert counters["accuracy_ratio"] <= DELTA / 4
        for level, p in AUDIT_LEVELS.items():
            assert counters[f"accuracy_ratio_{level}"] <= p
            assert counters[f"accuracy_misses_{level}"] == 0
        assert 0 <= counters["iterations_to_accuracy"] <= counters["markov_iterations"]


def test_markov_ratio_table_on_ratios_of_a_known_distribution():
    """Ratios drawn exponential with mean 1/2 at level p10 (share above 1: e^-2 = 0.135, above
    the bound 0.1: the 2000 runs refute it) and mean 1e-3 at the stop (share ~0): the table's
    quantiles, shares and Clopper-Pearson intervals are those of the draws."""
    rng = np.random.default_rng(0)
    runs = 2000
    at_p10 = rng.exponential(0.5, runs)
    table = pd.DataFrame({
        "dataset": "p", "method": "m", "p_solver": "s", "epsilon": 0.5, "p_n": 256,
        "accuracy_violations": 0, "solver_calls": 1, "allowed_miss_rate": DELTA / 4,
        "accuracy_ratio": rng.exponential(1e-3, runs), "accuracy_ratio_p50": 0.0,
        "accuracy_ratio_p10": at_p10, "accuracy_ratio_p1": 0.0,
        "markov_iterations": 40, "iterations_to_accuracy": 2})
    rows = markov_ratio_table(table).set_index("level")
    p10 = rows.loc["p10"]
    assert p10["ratio_q50"] == pytest.approx(0.5 * math.log(2), rel=0.1)
    assert p10["share_above_1"] == pytest.approx(math.exp(-2), abs=0.02)
    assert p10["share_ci_low"] < p10["share_above_1"] < p10["share_ci_high"]
    assert p10["share_ci_low"] > 0.1 and not p10["consistent"]
    stop = rows.loc["stop"]
    assert stop["share_above_1"] == 0.0 and stop["consistent"]
    assert stop["designed_bound"] == DELTA / 4
    assert stop["share_ci_high"] == pytest.approx(1 - 0.025 ** (1 / runs))
