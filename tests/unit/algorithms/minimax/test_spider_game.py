"""Paper 004's SPIDER estimators on BYOA's games (issue #39): the non-private twins reach G1's
exact empirical saddle point, the private methods at a large epsilon beat the point (0, 0), the
release tree is Alg. 2's (PrivateDiff's) schedule, and the noise that reaches the estimates and
the clip of every difference sum are the planned ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.minimax import spider_game
from dpminimax.kernels.sampling import expected_batch_size
from dpminimax.privacy.release import Batch, BatchedRelease, releases_of
from dpminimax.problems.games import ExactGame

CPU = torch.device("cpu")
G1 = "g1_quadratic_game"
METHODS = ("dp_double_spider_game", "privatediff_game")


def _fit(name, epsilon, seeds=(0, 1), **params):
    method = get_method(name)
    runs = [RunSpec(seed, epsilon, 1e-5, {"problem": G1, **params}) for seed in seeds]
    return method, method.fit(None, runs, CPU)


@pytest.mark.parametrize("name", [f"{m}_nonprivate" for m in METHODS])
def test_nonprivate_twins_reach_the_empirical_saddle_point(name):
    """No clip, no noise: the averaged iterates converge to G1's exact empirical saddle point
    (strong gap 0.5 at (0, 0); measured 1e-5 to 8e-5 here)."""
    method, fit = _fit(name, math.inf, n=256, lr=0.3, epochs=64)
    problem = method.problem(fit.resolved_params[0])
    for r, sample in enumerate(fit.samples):
        point = {block: value[r:r + 1] for block, value in fit.state.items()}
        saddle = problem.empirical_solution(sample)
        assert float(problem.strong_gap(point, sample)) < 2e-4
        for block, value in saddle.items():
            assert float(torch.linalg.vector_norm(point[block][0] - value)) < 0.03


@pytest.mark.parametrize("name", METHODS)
def test_private_runs_at_a_large_epsilon_are_far_better_than_the_origin(name):
    """epsilon = 50, n = 1024 (the defaults otherwise): the population strong gap is a tenth of
    the point (0, 0)'s at most."""
    method, fit = _fit(name, 50.0, seeds=(0, 1, 2))
    problem = method.problem(fit.resolved_params[0])
    gap = problem.strong_gap(fit.state)
    origin = problem.strong_gap({block: torch.zeros_like(v) for block, v in fit.state.items()})
    assert float(gap.mean()) < 0.1 * float(origin[0])
    assert fit.accounting[0]["epsilon"] == pytest.approx(50.0, rel=1e-3)


def _shape(part):
    if isinstance(part, Batch):
        return ("batch", tuple((r.name, r.sensitivity) for r in part.releases), part.count,
                part.sampling_rate)
    return ("repeat", tuple(_shape(p) for p in part.parts), part.count)


def test_the_release_trees_are_the_schedules_of_the_paper():
    """Alg. 2: per period, anchors for y then x (rate b_1 / n, bound C), then period - 1 pairs
    of differences (rate b / n, bound 2 C); PrivateDiff: one batch per step, y fresh, x
    anchored every ``period`` steps."""
    params = {"problem": G1, "n": 200, "batch_size": 10, "anchor_batch_size": 40,
              "epochs": 1.0, "period": 4, "clip": 1.5}
    run = RunSpec(0, 1.0, 1e-5, params)
    ds = get_method("dp_double_spider_game").plan(run, 200).releases
    pair = (("batch", (("y_difference", 3.0),), 1, 0.05),
            ("batch", (("x_difference", 3.0),), 1, 0.05))
    assert _shape(ds) == ("repeat", (("batch", (("y_anchor", 1.5),), 1, 0.2),
                                     ("batch", (("x_anchor", 1.5),), 1, 0.2), *pair * 3), 5)
    diff = get_method("privatediff_game").plan(run, 200).releases
    assert _shape(diff) == ("repeat", (
        ("batch", (("y_anchor", 1.5), ("x_anchor", 1.5)), 1, 0.05),
        ("batch", (("y_anchor", 1.5), ("x_difference", 3.0)), 3, 0.05)), 5)
    assert len({r.noise_multiplier for r in releases_of(ds)}) == 1


def _program(name, runs=60, **params):
    method = get_method(name)
    specs = [RunSpec(seed, 1.0, 1e-5, {"problem": G1, "n": 256, **params})
             for seed in range(runs)]
    resolved, shared, plans = method.plan_runs(None, specs)
    return method.program(None, specs, resolved, shared, plans, CPU), resolved[0]


@pytest.mark.parametrize("name", METHODS)
def test_the_noise_reaching_the_estimates_is_sigma_times_the_bound_over_qn(name, monkeypatch):
    """With every per-example gradient zero, an anchor estimate is its noise alone, std
    sigma C / (q_1 n) per coordinate, and a difference adds noise of std sigma min(c ||z_t -
    z_{t-1}||, 2 C) / (q n), the shrink read from the shared rule (a noise scaled for the mean,
    zeroed, or left at 2 C fails)."""
    monkeypatch.setattr(ExactGame, "per_example_grads", lambda self, point, batch: {
        block: torch.zeros(*batch["a"].shape[:2], value.shape[-1], dtype=value.dtype)
        for block, value in point.items()})
    shrinks = []
    shared_rule = spider_game.difference_shrink

    def spy(bound, movement, factor):
        shrink = shared_rule(bound, movement, factor)
        np.testing.assert_allclose(shrink, torch.clamp(factor * movement / bound, max=1.0))
        shrinks.append(shrink)
        return shrink

    monkeypatch.setattr(spider_game, "difference_shrink", spy)
    program, params = _program(name)
    sigma, clip, n = params["noise_multiplier"], params["clip_norm"], params["n"]
    anchor_rate = params["anchor_sampling_rate"] if name == METHODS[0] else params[
        "sampling_rate"]
    program.step()
    x_anchor = program.estimate[-1]["x"]
    std = float(x_anchor.std())
    assert std == pytest.approx(sigma * clip / expected_batch_size(n, anchor_rate), rel=0.1)
    program.step()
    noise = program.estimate[-1]["x"] - x_anchor
    shrink = shrinks[-1]
    assert float(shrink.max()) < 0.5  # the iterates moved less than 2 C / c: a real shrink
    expected = sigma * 2 * clip * shrink / expected_batch_size(n, params["sampling_rate"])
    ratio = noise / expected.view(-1, 1)
    assert float(ratio.pow(2).mean().sqrt()) == pytest.approx(1.0, rel=0.1)


@pytest.mark.parametrize("name", METHODS)
def test_every_difference_sum_is_clipped_at_the_shrunk_bound(name, monkeypatch):
    """A tiny c makes min(c ||z_t - z_{t-1}||, 2 C) clip every difference: each released sum
    is at most (examples in the batch) x that bound (an unclipped difference exceeds it)."""
    seen = []
    perturb = BatchedRelease.perturb

    def spy(self, summed, generators):
        if self.name.endswith("_difference"):
            seen.append((self.clip.clone(), summed.clone()))
        return perturb(self, summed, generators)

    monkeypatch.setattr(BatchedRelease, "perturb", spy)
    sizes = []
    poisson = spider_game.poisson_batches

    def batches(*args, **kwargs):
        index, mask = poisson(*args, **kwargs)
        sizes.append(mask.sum(dim=1))
        return index, mask

    monkeypatch.setattr(spider_game, "poisson_batches", batches)
    program, _ = _program(name, runs=4, difference_clip=1e-3, lr=0.5)
    for _ in range(3):
        program.step()
    assert seen
    biggest = max(int(s.max()) for s in sizes)
    for bound, summed in seen:
        norms = torch.linalg.vector_norm(summed, dim=-1)
        assert bool((norms <= biggest * bound * (1 + 1e-9)).all())
        assert bool((norms > 0.2 * bound).any())  # the clip binds: sums reach the bound


def test_a_schedule_whose_difference_noise_feeds_back_is_refused():
    """c lr sigma sqrt(d) / b >= 1 (the shared rule of the DP-DRO programs): at the step 1 / l
    the difference noise of G1 at epsilon 0.5 would grow from step to step to the 2 C cap; the
    a-priori step is far below it."""
    method = get_method("dp_double_spider_game")
    smoothness = method.problem(method.resolve({"problem": G1})).constants.smoothness
    with pytest.raises(ValueError, match="feeds back"):
        method.plan(RunSpec(0, 0.5, 1e-5, {"problem": G1, "lr": 1 / smoothness}), 1024)
    plan = method.plan(RunSpec(0, 0.5, 1e-5, {"problem": G1}), 1024)
    d, b = 20, 16  # x and y, each of dimension 10; the default batch
    assert (plan.values["difference_factor"] * plan.values["lr"] * plan.values["noise_multiplier"]
            * math.sqrt(d) / b) < 0.2
