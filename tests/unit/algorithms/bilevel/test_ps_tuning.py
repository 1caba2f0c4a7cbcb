"""Papernot & Steinke's random-repetition tuner (``ps_tuning``): its plan is dp_accounting's
``RepeatAndSelectDpEvent`` (Thm. 2, geometric) of one trial's two Gaussian releases,
calibrated to the target and charged for the repetition; the number of trials is geometric
with the planned mean; each trial's fit and validation loss are noised at the planned scale;
the output is the trial with the smallest NOISY validation loss; at a large epsilon it tunes
omega better than the start x0."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
import torch
from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant
from release_spy import spied_fit

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.bilevel.ps_tuning import trial_count
from dpminimax.privacy.accounting import RDP_ORDERS
from dpminimax.privacy.release import release_counts
from dpminimax.problems import get_bilevel_problem
from dpminimax.seeding import make_generator
from dpminimax.trivial import column

CPU = torch.device("cpu")
DELTA = 1e-5


def _plan(target: float, n: int = 1000, **params):
    return get_method("ps_tuning").plan(RunSpec(0, target, DELTA, {"n": n, **params}), n)


@pytest.mark.parametrize("target", [1.0, 8.0])
def test_calibrated_noise_meets_epsilon_and_the_repetition_is_charged(target):
    """The record is dp_accounting's RdpAccountant on RepeatAndSelect(trial, 10, 1), the trial
    the two Gaussians at the calibrated multiplier; it meets the target tightly and exceeds
    the epsilon of one trial alone."""
    plan, problem = _plan(target), get_bilevel_problem("pc_ridge_tuning", d_x=1, d_y=10)
    event, noise = plan.event(), plan.values["noise_multiplier"]
    assert isinstance(event, dp_event.RepeatAndSelectDpEvent)
    assert (event.mean, event.shape) == (10.0, 1.0)
    trial = event.event
    assert trial == dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(noise)] * 2)
    releases = {r.name: r for r in (plan.release("fit"), plan.release("score"))}
    assert release_counts(plan.releases) == {"fit": math.inf, "score": math.inf}  # K unbounded
    c = problem.constants
    assert releases["fit"].sensitivity == pytest.approx(2 * c.l0g_y / (problem.omega_min * 1000))
    assert releases["score"].sensitivity == 2.0
    direct = RdpAccountant(RDP_ORDERS).compose(event).get_epsilon(DELTA)
    assert plan.record["epsilon"] == pytest.approx(direct, rel=1e-9)
    assert target * (1 - 1e-3) <= plan.record["epsilon"] <= target
    alone = RdpAccountant(RDP_ORDERS).compose(trial).get_epsilon(DELTA)
    assert plan.values["epsilon_one_trial"] == pytest.approx(alone, rel=1e-9)
    assert alone < 0.7 * plan.record["epsilon"]


def test_the_number_of_trials_is_geometric_with_the_planned_mean():
    generator = make_generator(0, "trials")
    draws = torch.tensor([trial_count(generator, 10.0) for _ in range(20000)],
                         dtype=torch.float64)
    standard_error = math.sqrt(0.9) * 10 / math.sqrt(len(draws))
    assert abs(float(draws.mean()) - 10.0) <= 4 * standard_error
    assert int(draws.min()) == 1
    assert float((draws == 1).double().mean()) == pytest.approx(0.1, abs=0.01)


def _spied(target: float, seeds=range(6), n: int = 1000):
    method = get_method("ps_tuning")
    runs = [RunSpec(seed, target, DELTA, {"n": n}) for seed in seeds]
    calls = spied_fit(method, None, runs)
    fit = method.fit(None, runs, CPU)
    return method, runs, calls, fit


def test_each_trial_noises_its_fit_and_its_loss_at_the_planned_scale():
    method, runs, calls, fit = _spied(1.0)
    plan = method.plan(runs[0], 1000)
    made, scaled = defaultdict(int), defaultdict(list)
    for releases, summed, out in calls:
        for r, release in enumerate(releases):
            assert release.noise_multiplier == plan.values["noise_multiplier"]
            made[release.name] += 1
            std = release.noise_multiplier * release.sensitivity
            scaled[release.name].append(((out[r] - summed[r]) / std).flatten())
    trials = max(int(row["trials"]) for row in fit.counters)
    assert made == {"fit": trials * len(runs), "score": trials * len(runs)}
    for name, draws in scaled.items():
        rms = float(torch.cat(draws).pow(2).mean().sqrt())
        assert abs(math.log(rms)) <= 4.0 / math.sqrt(2 * len(torch.cat(draws))) + 0.02, name


def test_the_output_is_the_trial_with_the_smallest_noisy_loss():
    """Replaying each run's trials stream (K, then K uniform candidates) and the spied score
    releases: the output omega is the argmin of the noisy losses over the run's K trials,
    which differs from the argmin of the noiseless ones in some run."""
    method, runs, calls, fit = _spied(1.0, seeds=range(8))
    problem = get_bilevel_problem("pc_ridge_tuning", d_x=1, d_y=10)
    points = problem.candidates(10)
    scores = [(summed, out) for releases, summed, out in calls if releases[0].name == "score"]
    noisy_differs = False
    for r, run in enumerate(runs):
        stream = make_generator(run.seed, "trials")
        count = trial_count(stream, 10.0)
        choice = torch.randint(len(points), (count,), generator=stream)
        assert int(fit.counters[r]["trials"]) == count
        noisy = torch.stack([out[r] for _, out in scores[:count]])
        clean = torch.stack([summed[r] for summed, _ in scores[:count]])
        picked = int(noisy.argmin())
        torch.testing.assert_close(fit.state["x"][r], points[choice[picked]])
        noisy_differs |= bool(points[choice[picked]] != points[choice[int(clean.argmin())]])
    assert noisy_differs


def test_at_a_large_epsilon_the_tuned_omega_beats_x0():
    method = get_method("ps_tuning")
    runs = [RunSpec(seed, 1000.0, DELTA, {"n": 4000}) for seed in range(4)]
    fit = method.fit(None, runs, CPU)
    rows = method.task.evaluate(fit, None, CPU)
    for row in rows:
        assert row["excess_test_loss"] < row[column("excess_test_loss")]
