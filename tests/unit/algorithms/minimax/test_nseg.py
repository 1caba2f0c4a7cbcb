"""NSEG (Boob & Guzmán 2021): the noiseless twin reaches the empirical saddle point, the plan
accounts 2 batches per iteration at the target epsilon, and the program makes exactly the
planned releases, clipped, with the planned noise on the gradient sum."""

from __future__ import annotations

import math

import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.minimax import sgda
from dpminimax.privacy.release import BatchedRelease, release_counts

CPU = torch.device("cpu")


def _fit(name, epsilon, seeds=(0, 1), **params):
    method = get_method(name)
    runs = [RunSpec(seed, epsilon, 1e-5, params) for seed in seeds]
    return method, method.fit(None, runs, CPU)


@pytest.mark.parametrize(("problem", "tolerance"), [("g1_quadratic_game", 5e-3),
                                                    ("g2_bilinear_game", 3e-2)])
def test_nonprivate_full_batch_extragradient_reaches_the_empirical_saddle(problem, tolerance):
    """q = 1, no noise: deterministic extragradient with eta < 1 / l on these smooth monotone
    problems (unique saddles) converges linearly, so the average of its extrapolated points
    is off by sum_t ||z_t - z*|| / T = C / T; C is ~9 on G1 and ~60-75 on G2 (slow: its
    bilinear coupling is ill-conditioned; measured for T = 1000..4000, constant in T), so at
    T = 4000 the tolerances are 2x and 2.5x C / T (per block)."""
    method, fit = _fit("nseg_nonprivate", math.inf, problem=problem, n=100, batch_size=100,
                       epochs=8000, lr=0.3)
    assert fit.resolved_params[0]["steps"] == 4000
    for r, run in enumerate(fit.runs):
        params = fit.resolved_params[r]
        problem_ = method.problem(params)
        assert params["lr"] < 1.0 / problem_.constants.smoothness
        exact = problem_.empirical_solution(method.sample(problem_, run, params, CPU), None)
        for block, value in exact.items():
            assert float(torch.linalg.vector_norm(fit.state[block][r] - value)) < tolerance


def test_the_plan_accounts_two_batches_per_iteration_at_the_target_epsilon():
    method = get_method("nseg")
    run = RunSpec(0, 0.5, 1e-5, {"problem": "g2_bilinear_game", "n": 512, "epochs": 3,
                                 "batch_size": 32})
    plan = method.plan(run, 512)
    steps, q = plan.values["steps"], plan.values["sampling_rate"]
    assert (steps, q) == (math.ceil(3 / (2 * q)), 32 / 512)
    assert release_counts(plan.releases) == {"gradient_x": 2 * steps, "gradient_y": 2 * steps}
    assert plan.releases.sampling_rate == q
    lipschitz = method.problem(method.resolve(run.params)).constants.lipschitz
    assert [(r.name, r.sensitivity) for r in plan.releases.releases] == [
        ("gradient_x", lipschitz), ("gradient_y", lipschitz)]
    assert 0.5 * (1 - 1e-4) <= plan.record["epsilon"] <= 0.5


def test_the_theory_schedule_costs_order_n_squared():
    """T = n iterations of two batches at the with-replacement inclusion rate 1 - (1-1/n)^n:
    gradients / n grows like n (BYOA's Table 1: O(n^2))."""
    method = get_method("nseg")
    for n in (64, 256):
        plan = method.plan(RunSpec(0, 0.5, 1e-5, {"n": n, "schedule": "boob_guzman2021"}), n)
        assert plan.values["steps"] == n
        assert plan.values["sampling_rate"] == pytest.approx(1 - (1 - 1 / n) ** n)
        assert 0.5 * (1 - 1e-4) <= plan.record["epsilon"] <= 0.5


def test_counters_are_the_realised_sizes_of_two_batches_per_iteration(monkeypatch):
    drawn = []
    original = sgda.poisson_batches

    def spy(*args, **kwargs):
        index, mask = original(*args, **kwargs)
        drawn.append(mask.sum(dim=1).tolist())
        return index, mask

    monkeypatch.setattr(sgda, "poisson_batches", spy)
    _, fit = _fit("nseg", 1.0, seeds=(0, 1, 2), problem="g2_bilinear_game", n=200,
                  batch_size=20, epochs=1)
    steps = fit.resolved_params[0]["steps"]
    assert len(drawn) == 2 * steps
    for r, counters in enumerate(fit.counters):
        assert counters["gradient_evaluations"] == sum(sizes[r] for sizes in drawn)
        assert counters["gradient_evaluations_per_sample"] == pytest.approx(
            counters["gradient_evaluations"] / 200)
    _, full = _fit("nseg_nonprivate", math.inf, seeds=(0,), problem="g2_bilinear_game", n=50,
                   batch_size=50, epochs=6)
    assert full.counters[0]["gradient_evaluations"] == 2 * 3 * 50


def test_every_release_is_planned_clipped_and_made_as_often_as_planned(monkeypatch):
    """With a clip far below the gradients' size every released sum is within (batch size) x
    clip, and each block's release is perturbed exactly 2T times."""
    calls = []
    original = BatchedRelease.perturb

    def spy(release, summed, generators):
        calls.append((release.name, summed.clone(), release.releases[0].sensitivity))
        return original(release, summed, generators)

    monkeypatch.setattr(BatchedRelease, "perturb", spy)
    method, fit = _fit("nseg", 2.0, seeds=(0,), problem="g2_bilinear_game", n=64,
                       batch_size=16, epochs=2, clip=0.01)
    plan = method.plan(fit.runs[0], 64)
    made = {name: sum(1 for call in calls if call[0] == name) for name, _, _ in calls}
    assert made == release_counts(plan.releases)
    for _, summed, clip in calls:
        assert float(torch.linalg.vector_norm(summed)) <= 64 * clip * (1 + 1e-9)


def test_the_noise_reaching_the_iterate_is_the_planned_noise_on_the_sum():
    """One full-batch iteration (T = 1) from 0: the private output minus the twin's (same
    batches, clip L changes nothing) is eta / n times the noise of the x release, std
    sigma C: its pooled rms over 300 runs is within 10% of that (4 standard errors)."""
    params = {"problem": "g2_bilinear_game", "n": 40, "batch_size": 40, "epochs": 2, "lr": 1e-3}
    seeds = tuple(range(300))
    method, private = _fit("nseg", 1.0, seeds, **params)
    _, twin = _fit("nseg_nonprivate", math.inf, seeds, **params)
    assert private.resolved_params[0]["steps"] == 1
    plan = method.plan(private.runs[0], 40)
    release = plan.release("gradient_x")
    expected = 1e-3 / 40 * release.noise_multiplier * release.sensitivity
    rms = float((private.state["x"] - twin.state["x"]).pow(2).mean().sqrt())
    assert rms == pytest.approx(expected, rel=0.1)
