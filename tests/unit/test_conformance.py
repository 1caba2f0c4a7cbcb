"""The method contract, checked on every registered method (issue #17, item 6).

Each method trains a few runs on a tiny fair-classification problem while a spy on
:meth:`BatchedRelease.perturb` sees every noisy release the program makes. Checked:

* plan / record: the accounting record is the accountant's epsilon of the event derived from the
  plan's releases (a paper theorem's closed-form record is exempt: it says so), within target;
* releases: every release the program perturbs is one its plan declares (same name, mechanism and
  noise multiplier, sensitivity at most the planned one: PF-LD bounds its dual release by the
  released counts), and every noised release of the plan is perturbed; non-private methods draw
  no noise;
* noise: the noise actually added, pooled over steps and runs, has the planned scale
  (noise multiplier x sensitivity; a Laplace scale b has std sqrt(2) b);
* clipping: on data with outlier rows, every released sum is within n x its sensitivity (the most
  that n contributions bounded by the sensitivity can add up to);
* determinism: the same runs give the same bits; a run alone equals the same run in a batch.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict

import numpy as np
import pytest
import torch
from release_spy import ReleaseSpy
from toydata import toy_dataset

from dpminimax.algorithms import METHODS, get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.privacy import epsilon
from dpminimax.privacy.release import release_counts, releases_of

N, TARGET, DELTA, SEEDS = 64, 4.0, 1e-5, (0, 1, 2, 3)
DRO = {"epochs": 2, "model": "logistic_regression", "anchor_batch_size": 32, "period": 3,
       "eval_every": 4, "curve_rows": 16}
TINY = {"dp_sgd": {"epochs": 2}, "racodp": {"max_steps": 10},
        "dpfermi": {"epochs": 2}, "jagielski2019": {"rounds": 3, "oracle_steps": 3},
        "tran2021a": {"epochs": 2}, "tran2021b": {"epochs": 2},
        # a synthetic problem (its own sample of N examples); a clip below the gradients'
        # size, so that unclipped sums would exceed N x the sensitivity
        "dp_sgda": {"epochs": 2, "n": N, "clip": 0.01},
        "output_perturbation": {"n": N}, "phased_output_perturbation": {"n": N},
        "phased_minimax_output_perturbation": {"n": N}, "csc_output_perturbation": {"n": N},
        "phased_sgd": {"n": N},
        "dp_bilevel": {"n": N, "outer_steps": 3},
        # paper 004 on the linear model; anchors of 32 rows, SPIDER periods of 3 steps
        "dp_double_spider": DRO, "dp_sgda_dro": DRO, "privatediff_dro": DRO,
        "dp_recursive_spider": DRO}
#: Methods that release once (their program has one step).
ONE_STEP = ("output_perturbation", "exact_solution", "ridge_output_perturbation", "dp_grid",
            "fixed_omega", "np_grid")
#: Methods that release exact solutions or SGD outputs: their sensitivity is a stability bound
#: (BYOA Lemmas 3.3, 3.5, 4.3, 4.5; Hardt et al. 2016 for phased SGD), not n clipped
#: contributions; test_output_perturbation, test_phased_minimax and test_phased_sgd check them
#: end to end.
OUTPUT_RELEASES = ("output_perturbation", "phased_output_perturbation",
                   "phased_minimax_output_perturbation", "csc_output_perturbation",
                   "ridge_output_perturbation", "phased_sgd")
#: Closed-form records of a paper's theorem: not derived from the releases (they say so).
THEOREM_ACCOUNTANTS = ("paper_theorem_3_3",)


def tiny_params(name: str) -> dict:
    """Small batches and few steps; the values of the method's family (those it has: a
    non-private twin has no clip)."""
    cls = METHODS[name]
    family = next(base for base in TINY if base == name or any(
        getattr(klass, "name", None) == base for klass in cls.__mro__))
    return {key: value for key, value in {"batch_size": 16, **TINY[family]}.items()
            if key in cls.parameters}


def problem(outliers: bool = False):
    """64 rows, 4 features, a label that depends on them and a binary group; with
    ``outliers``, four rows scaled by 10^4 (their unclipped contributions dwarf any bound)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N, 4))
    s = rng.integers(0, 2, N)
    y = (x[:, 0] + 0.5 * s + 0.3 * rng.normal(size=N) > 0).astype(int)
    if outliers:
        x[:4] *= 1.0e4
    return toy_dataset(x, y, s)


def runs_of(name: str, seeds=SEEDS) -> list[RunSpec]:
    target = TARGET if METHODS[name].private else math.inf
    return [RunSpec(seed, target, DELTA, tiny_params(name)) for seed in seeds]


def _tensors(value) -> dict[str, torch.Tensor]:
    items = value.items() if isinstance(value, dict) else [("", value)]
    return {key: tensor.detach().clone().double() for key, tensor in items}


def _calls(spy: ReleaseSpy) -> list:
    """The spy's releases as (releases, sums, noisy output) in float64; a report-noisy-min
    call's output is None (its noise is not observable in the index it releases:
    test_report_noisy_min checks the index's law)."""
    return ([(releases, _tensors(summed), _tensors(out)) for releases, summed, out in spy.perturbs]
            + [(releases, _tensors(scores), None) for releases, scores, _ in spy.selections])


def _state(fit) -> dict[str, np.ndarray]:
    return {key: np.asarray(value.detach().cpu()) for key, value in fit.state.items()}


@functools.cache
def observed(name: str):
    """Every fit the checks read: (plans, fit, spy calls, repeat fit, the third run alone, and
    for a private method its plans and spy calls on the outlier data)."""
    with pytest.MonkeyPatch.context() as patch:
        method, data, runs = get_method(name), problem(), runs_of(name)
        spy = ReleaseSpy(patch)
        fit = method.fit(data, runs, torch.device("cpu"))
        calls = _calls(spy)
        spy.clear()
        plans = [method.plan(run, N, data) for run in runs]
        again = method.fit(data, runs, torch.device("cpu"))
        alone = method.fit(data, runs[2:3], torch.device("cpu"))
        outlier_calls = None
        if method.private:
            spy.clear()
            method.fit(problem(outliers=True), runs, torch.device("cpu"))
            outlier_calls = _calls(spy)
    return plans, fit, calls, again, alone, outlier_calls


NAMES = sorted(METHODS)
PRIVATE = [name for name in NAMES if METHODS[name].private]


@pytest.mark.parametrize("name", NAMES)
def test_record_is_the_accounting_of_the_derived_event(name):
    plans, fit, *_ = observed(name)
    for plan, record in zip(plans, fit.accounting, strict=True):
        assert record == plan.record
        if record["accountant"] in THEOREM_ACCOUNTANTS:
            assert record["epsilon"] == TARGET and record["caveats"]
            continue
        # a record may keep part of delta outside the mechanism (BYOA: the solver's failure)
        derived = epsilon(plan.event(), record.get("delta_mechanism", DELTA),
                          record["accountant"])
        if METHODS[name].private:
            assert record["epsilon"] == pytest.approx(derived, rel=1e-9) and derived <= TARGET
            assert any(release.private for release in releases_of(plan.releases))
        else:
            assert math.isinf(derived) and math.isinf(record["epsilon"])


@pytest.mark.parametrize("name", NAMES)
def test_every_perturbed_release_is_planned_and_every_planned_one_perturbed(name):
    plans, _, calls, *_ = observed(name)
    assert calls, "the program released nothing through a BatchedRelease"
    perturbed = defaultdict(int)
    for releases, _, _ in calls:
        for r, release in enumerate(releases):
            planned = {p.name: p for p in releases_of(plans[r].releases)}
            assert release.name in planned, f"run {r} released {release.name!r} unplanned"
            plan = planned[release.name]
            assert (release.mechanism, release.noise_multiplier) == (
                plan.mechanism, plan.noise_multiplier), release.name
            assert release.sensitivity <= plan.sensitivity * (1 + 1e-12), release.name
            perturbed[release.name] += release.private
    for plan in plans:
        for release in releases_of(plan.releases):
            assert not release.private or perturbed[release.name], (
                f"planned release {release.name!r} was never perturbed")
    if not METHODS[name].private:
        for _, summed, out in calls:
            assert out is None or all(torch.equal(summed[k], out[k]) for k in summed), (
                "noise without privacy")


@pytest.mark.parametrize("name", PRIVATE)
def test_no_release_is_made_more_often_than_planned(name):
    """A sum noised under a planned release's name but not accounted (one release object
    reused for a second sum) shows as more perturbations than the plan's count."""
    plans, _, calls, *_ = observed(name)
    made = defaultdict(int)
    for releases, _, _ in calls:
        for r, release in enumerate(releases):
            made[r, release.name] += release.private
    for (r, release), count in made.items():
        planned = release_counts(plans[r].releases)[release]
        assert count <= planned, f"run {r} made {release!r} {count} times, planned {planned}"


def _noise_by_release(calls):
    """Noise / planned std of every entry, pooled per release name over calls and runs."""
    pooled = defaultdict(list)
    for releases, summed, out in calls:
        for r, release in enumerate(releases):
            if not release.private or out is None:
                continue
            std = release.noise_multiplier * release.sensitivity
            std *= math.sqrt(2.0) if release.mechanism == "laplace" else 1.0
            for key in summed:
                pooled[release.name].append(((out[key][r] - summed[key][r]) / std).flatten())
    return {name: torch.cat(parts) for name, parts in pooled.items()}


@pytest.mark.parametrize("name", PRIVATE)
def test_the_noise_added_has_the_planned_scale(name):
    _, _, calls, *_ = observed(name)
    pooled = _noise_by_release(calls)
    assert pooled
    for release, noise in pooled.items():
        rms = float(noise.pow(2).mean().sqrt())
        # 4 standard errors of log(rms) for len(noise) draws, plus float rounding
        allowed = 4.0 / math.sqrt(2 * len(noise)) + 0.02
        assert abs(math.log(rms)) <= allowed, (
            f"{release}: noise rms / planned std = {rms:.4g} over {len(noise)} draws")


@pytest.mark.parametrize("name", PRIVATE)
def test_released_sums_are_within_n_times_the_sensitivity_on_outliers(name):
    if name in OUTPUT_RELEASES:
        pytest.skip("releases exact solutions: a stability bound, not clipped contributions")
    plans, *_, outlier_calls = observed(name)
    if plans[0].record["accountant"] in THEOREM_ACCOUNTANTS:
        pytest.skip("a paper-theorem mode bounds the sensitive attribute's effect only; x and y "
                    "are public there and their terms are not clipped")
    checked = 0
    for releases, summed, _ in outlier_calls:
        for r, release in enumerate(releases):
            if not release.private:
                continue
            order = {"gaussian": 2, "laplace": 1, "exponential": math.inf}[release.mechanism]
            size = torch.linalg.vector_norm(
                torch.cat([summed[k][r].flatten() for k in summed]), ord=order)
            assert size <= N * release.sensitivity * (1 + 1e-6), (
                f"{release.name}: |sum| = {float(size):.4g} > n x sensitivity "
                f"{N * release.sensitivity:.4g} (contributions not clipped?)")
            checked += 1
    assert checked


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_bits_and_alone_equals_in_batch(name):
    _, fit, _, again, alone, _ = observed(name)
    first, second, single = _state(fit), _state(again), _state(alone)
    for key in first:
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
        np.testing.assert_allclose(single[key][0], first[key][2], rtol=1e-5, atol=1e-6,
                                   err_msg=key)


@pytest.mark.parametrize("name", NAMES)
def test_every_method_calls_its_monitor_after_every_step(name):
    """Every method takes ``monitor`` (the tuning protocol's checkpoints, the NaN guard)."""
    steps = []
    fit = get_method(name).fit(problem(), runs_of(name, seeds=(0,)), torch.device("cpu"),
                               monitor=lambda step, model, state: steps.append(step))
    assert steps == list(range(1, len(steps) + 1))
    assert len(steps) >= (1 if name in ONE_STEP else 2)
    assert fit.state
