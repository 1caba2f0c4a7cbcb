"""The weak gap over seeds (BYOA, the quantity of Thm. 4.8): G2's closed form,
and the synthetic-optimization task reporting it per group of seeds beside Thm. 4.8's bound."""

from __future__ import annotations

import pytest
import torch

from dpminimax.algorithms import expand_runs, get_method
from dpminimax.api.training import fit_by_shared
from dpminimax.problems import BilinearGame
from dpminimax.seeding import make_generator


def test_g2_weak_gap_is_the_strong_gap_of_the_mean_point_and_cancels_noise():
    """G2 is affine in each block: noise of mean zero around the saddle point costs no weak gap
    while every seed's strong gap is positive; one point's weak gap is its
    strong gap; and it equals max_y mean F(x_s, y) - min_x mean F(x, y_s) computed by brute
    force over the balls' best responses of the averaged objectives."""
    problem = BilinearGame(seed=3)
    saddle = problem.population_solution()
    noise = {b: 0.3 * torch.randn(6, 10, generator=make_generator(3, b), dtype=torch.float64)
             for b in saddle}
    noisy = {b: saddle[b] + torch.cat([noise[b], -noise[b]]) for b in saddle}
    assert abs(float(problem.weak_gap(noisy))) < 1e-12
    assert float(problem.strong_gap(noisy).min()) > 1e-3
    one = {b: v[:1] for b, v in noisy.items()}
    assert float(problem.weak_gap(one)) == pytest.approx(float(problem.strong_gap(one)[0]),
                                                         abs=1e-12)
    shifted = {b: noisy[b] + 0.1 for b in noisy}  # mean off the saddle point
    assert float(problem.weak_gap(shifted)) == pytest.approx(
        float(problem.strong_gap({b: v.mean(0, keepdim=True) for b, v in shifted.items()})[0]),
        abs=1e-12)
    assert 0 < float(problem.weak_gap(shifted)) <= float(problem.strong_gap(shifted).mean())


@pytest.mark.parametrize("problem", ["g2_bilinear_game", "g3_softplus_game"])
def test_task_reports_one_weak_gap_per_group_of_seeds_with_its_bound(problem):
    """Algs. 4 o 5 over 4 seeds at two sample sizes: every run of a (budget, n) group carries
    the group's weak gap, at most the group's mean strong gap, beside Thm. 4.8's bound."""
    method = get_method("phased_minimax_output_perturbation")
    runs = [run for n in (256, 1024)
            for run in expand_runs([0, 1, 2, 3], 0.9, 1e-7, {"problem": problem, "n": n})]
    (fit,) = fit_by_shared(method, None, runs, torch.device("cpu"))  # a program per n, joined
    rows = method.task.evaluate(fit, None, torch.device("cpu"))
    weak_by_n = {}
    for n in (256, 1024):
        group = [row for row, params in zip(rows, fit.resolved_params, strict=True)
                 if int(params["n"]) == n]
        weak = {row["population_weak_gap"] for row in group}
        assert len(group) == 4 and len(weak) == 1
        weak_by_n[n] = weak.pop()
        strong = sum(row["population_strong_gap"] for row in group) / len(group)
        assert weak_by_n[n] <= strong + 1e-12
        points = {name: value[[i for i, p in enumerate(fit.resolved_params)
                               if int(p["n"]) == n]] for name, value in fit.state.items()}
        assert weak_by_n[n] == pytest.approx(float(method.problem(fit.resolved_params[0])
                                                    .weak_gap(points)), rel=1e-12)
        for row in group:
            assert row["population_weak_gap_bound"] == row["population_strong_gap_bound"]
            assert row["population_weak_gap_over_bound"] == pytest.approx(
                row["population_weak_gap"] / row["population_weak_gap_bound"])


def test_games_without_a_weak_gap_get_no_weak_gap_columns():
    """G1's rows have a strong gap but no weak gap (and so no weak-gap bound column)."""
    method = get_method("output_perturbation")
    runs = expand_runs([0, 1], 0.9, 1e-7, {"problem": "g1_quadratic_game", "n": 256})
    fit = method.fit(None, runs, torch.device("cpu"))
    rows = method.task.evaluate(fit, None, torch.device("cpu"))
    assert all("population_strong_gap" in row for row in rows)
    assert not any(key.startswith("population_weak_gap") for row in rows for key in row)
