"""BYOA's projection ablation (issue 36 item 7): ``project: true`` projects the releases of Algs.
1, 3, 4 o 5, Cor. 4.9 and the direct method B1 onto their balls. It is post-processing: the
plan and its privacy record are the same with and without it; the output is on the balls; and
for a single release the projection never moves a block farther from an optimum inside its
ball (the projection onto a convex set is non-expansive towards its points)."""

from __future__ import annotations

import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec

CPU = torch.device("cpu")
#: (method, problem): Alg. 1, Alg. 3, Algs. 4 o 5, Cor. 4.9, B1 (single release: the last is
#: whether the output is one release, the projection of the unprojected one).
CASES = [("output_perturbation", "p1_least_squares", True),
         ("output_perturbation", "g1_quadratic_game", True),
         ("ridge_output_perturbation", "p1_convex_least_squares", True),
         ("phased_minimax_output_perturbation", "g2_bilinear_game", False),
         ("csc_output_perturbation", "g4_csc_game", False)]
SEEDS = range(6)


def _fit(method, problem: str, project: bool, n: int = 256):
    runs = [RunSpec(seed, 0.5, 1e-7, {"problem": problem, "n": n, "project": project})
            for seed in SEEDS]
    return runs, method.fit(None, runs, CPU)


@pytest.mark.parametrize(("name", "problem", "single"), CASES)
def test_projection_is_post_processing(name, problem, single):
    """The same plan (values, releases, privacy record) with and without the projection; the
    projected output lies on the balls; the share of releases that left the ball is counted
    before the projection (the same for a single release)."""
    method = get_method(name)
    _, plain = _fit(method, problem, False)
    runs, projected = _fit(method, problem, True)
    for run in runs:
        unprojected = RunSpec(run.seed, run.epsilon, run.delta, {**run.params, "project": False})
        on, off = method.plan(run, 256), method.plan(unprojected, 256)
        assert on.record == off.record
        assert on.values == off.values
        assert on.releases == off.releases
    instance = method.problem(projected.resolved_params[0])
    for block, value in projected.state.items():
        radius = instance.block(block).radius
        assert float(torch.linalg.vector_norm(value, dim=-1).max()) <= radius * (1 + 1e-12)
    shares = [c["release_outside_ball"] for c in plain.counters]
    assert all(0.0 <= share <= 1.0 for share in shares)
    if single:
        assert shares == [c["release_outside_ball"] for c in projected.counters]


@pytest.mark.parametrize(("name", "problem"), [(n, p) for n, p, single in CASES if single])
def test_projection_never_moves_a_single_release_away_from_the_optimum(name, problem):
    """Known answer: with the same noise (streams per seed), the projected output is the
    projection of the unprojected one, radius x / ||x|| where the release left the ball and x
    where it did not, and its distance to the population optimum (inside the ball) is never
    larger. At n = 256 and epsilon 0.5 some releases leave the ball (the ablation acts)."""
    method = get_method(name)
    _, plain = _fit(method, problem, False)
    _, projected = _fit(method, problem, True)
    instance = method.problem(plain.resolved_params[0])
    optimum = instance.population_solution()
    left = 0
    for block, value in plain.state.items():
        radius = instance.block(block).radius
        norms = torch.linalg.vector_norm(value, dim=-1, keepdim=True)
        expected = torch.where(norms > radius, value * radius / norms, value)
        torch.testing.assert_close(projected.state[block], expected, rtol=0, atol=1e-12)
        star = optimum[block].to(value)
        before = torch.linalg.vector_norm(value - star, dim=-1)
        after = torch.linalg.vector_norm(projected.state[block] - star, dim=-1)
        assert bool((after <= before + 1e-12).all())
        left += int((norms > radius).sum())
    assert left > 0, "no release left the ball: the test would not exercise the projection"


def test_planted_release_off_the_ball_is_pulled_back(monkeypatch):
    """A release planted off the ball (a shift of 10 per coordinate) is counted outside and,
    projected, lands on the sphere of radius R along its own direction."""
    from dpminimax.privacy.release import BatchedRelease

    perturb = BatchedRelease.perturb
    monkeypatch.setattr(BatchedRelease, "perturb",
                        lambda self, values, streams: perturb(self, values, streams) + 10.0)
    method = get_method("output_perturbation")
    _, plain = _fit(method, "g1_quadratic_game", False)
    _, projected = _fit(method, "g1_quadratic_game", True)
    assert all(c["release_outside_ball"] == 1.0 for c in projected.counters)
    for block, value in plain.state.items():
        radius = method.problem(plain.resolved_params[0]).block(block).radius
        norms = torch.linalg.vector_norm(projected.state[block], dim=-1)
        torch.testing.assert_close(norms, torch.full_like(norms, radius))
        cosine = torch.nn.functional.cosine_similarity(projected.state[block], value, dim=-1)
        torch.testing.assert_close(cosine, torch.ones_like(cosine))
