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
* determinism: the same runs give the same bits; a run alone equals the same run in a batch;
* sensitivity against neighbours (issue #41): the runs refitted on adversarial replace-one
  neighbours of the data, fed the first fit's released outputs (so that each sum differs only
  by what the changed example contributes), change no release by more than its sensitivity
  (plus twice the certified radius of a base solver whose output it releases), and some
  release by at least a stated share of it (half; :data:`LOOSE` for a-priori bounds);
* accounting by another path: each record is dp_accounting's own epsilon of the derived
  event (or, for an event it refuses, between two bounds it computes).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from typing import NamedTuple

import numpy as np
import pytest
import torch
from dp_accounting import NeighboringRelation, dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from release_spy import CPU, ReleaseSpy
from toydata import toy_dataset

from dpminimax.algorithms import METHODS, get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.minimax.output_perturbation import BaseSolvers
from dpminimax.privacy import epsilon
from dpminimax.privacy.release import release_counts, releases_of
from dpminimax.problems import BILEVEL_PROBLEMS, PROBLEMS

N, TARGET, DELTA, SEEDS = 64, 4.0, 1e-5, (0, 1, 2, 3)
DRO = {"epochs": 2, "model": "logistic_regression", "anchor_batch_size": 32, "period": 3,
       "eval_every": 4, "curve_rows": 16}
TINY = {"dp_sgd": {"epochs": 2}, "racodp": {"max_steps": 10},
        "dpfermi": {"epochs": 2}, "jagielski2019": {"rounds": 3, "oracle_steps": 3},
        "tran2021a": {"epochs": 2}, "tran2021b": {"epochs": 2},
        # a synthetic problem (its own sample of N examples); a clip below the gradients'
        # size, so that unclipped sums would exceed N x the sensitivity
        "dp_sgda": {"epochs": 2, "n": N, "clip": 0.01},
        # paper 004's SPIDER estimators on G1: anchors of 32 rows, periods of 3 steps
        "dp_double_spider_game": {"epochs": 2, "n": N, "clip": 0.01, "anchor_batch_size": 32,
                                  "period": 3},
        "privatediff_game": {"epochs": 2, "n": N, "clip": 0.01, "period": 3},
        "output_perturbation": {"n": N}, "phased_output_perturbation": {"n": N},
        "phased_minimax_output_perturbation": {"n": N}, "csc_output_perturbation": {"n": N},
        "phased_sgd": {"n": N},
        "dp_bilevel": {"n": N, "outer_steps": 3},
        # paper 004 on the linear model; anchors of 32 rows, SPIDER periods of 3 steps
        "dp_double_spider": DRO, "dp_sgda_dro": DRO, "privatediff_dro": DRO,
        "dp_recursive_spider": DRO}
#: Methods that release once (their program has one step).
ONE_STEP = ("output_perturbation", "exact_solution", "ridge_output_perturbation", "dp_grid",
            "fixed_omega", "np_grid", "ps_tuning")
#: Methods that release exact solutions or SGD outputs: their sensitivity is a stability bound
#: (BYOA Lemmas 3.3, 3.5, 4.3, 4.5; Hardt et al. 2016 for phased SGD), not n clipped
#: contributions; test_output_perturbation, test_phased_minimax and test_phased_sgd check them
#: end to end.
OUTPUT_RELEASES = ("output_perturbation", "phased_output_perturbation",
                   "phased_minimax_output_perturbation", "csc_output_perturbation",
                   "ridge_output_perturbation", "phased_sgd")
#: Closed-form records of a paper's theorem: not derived from the releases (they say so).
THEOREM_ACCOUNTANTS = ("paper_theorem_3_3",)


#: The small sizes of a method outside :data:`TINY`'s families (a paper plugin's, whose
#: parameters this suite does not know): those of them it has.
GENERIC = {"epochs": 2, "max_steps": 10, "rounds": 3, "oracle_steps": 3, "outer_steps": 3,
           "n": N}


def tiny_params(name: str) -> dict:
    """Small batches and few steps; the values of the method's family (those it has: a
    non-private twin has no clip)."""
    cls = METHODS[name]
    family = next((base for base in TINY if base == name or any(
        getattr(klass, "name", None) == base for klass in cls.__mro__)), None)
    return {key: value for key, value in {"batch_size": 16, **TINY.get(family, GENERIC)}.items()
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


class Observed(NamedTuple):
    """What the checks read of one method's fits."""

    plans: list
    fit: object
    calls: list
    again: object
    alone: object
    outlier_calls: list | None
    #: The first fit's releases as the spy recorded them (:attr:`ReleaseSpy.record`).
    record: tuple[list, list]


@functools.cache
def observed(name: str) -> Observed:
    """Every fit the checks read: plans, fit, spy calls, repeat fit, the third run alone, for a
    private method its spy calls on the outlier data, and the first fit's raw record."""
    with pytest.MonkeyPatch.context() as patch:
        method, data, runs = get_method(name), problem(), runs_of(name)
        spy = ReleaseSpy(patch)
        fit = method.fit(data, runs, CPU)
        calls, record = _calls(spy), spy.record
        spy.clear()
        plans = [method.plan(run, N, data) for run in runs]
        again = method.fit(data, runs, CPU)
        alone = method.fit(data, runs[2:3], CPU)
        outlier_calls = None
        if method.private:
            spy.clear()
            method.fit(problem(outliers=True), runs, CPU)
            outlier_calls = _calls(spy)
    return Observed(plans, fit, calls, again, alone, outlier_calls, record)


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
    plans, outlier_calls = observed(name).plans, observed(name).outlier_calls
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
    _, fit, _, again, alone, *_ = observed(name)
    first, second, single = _state(fit), _state(again), _state(alone)
    for key in first:
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
        np.testing.assert_allclose(single[key][0], first[key][2], rtol=1e-5, atol=1e-6,
                                   err_msg=key)


@pytest.mark.parametrize("name", NAMES)
def test_every_method_calls_its_monitor_after_every_step(name):
    """Every method takes ``monitor`` (the tuning protocol's checkpoints, the NaN guard)."""
    steps = []
    fit = get_method(name).fit(problem(), runs_of(name, seeds=(0,)), CPU,
                               monitor=lambda step, model, state: steps.append(step))
    assert steps == list(range(1, len(steps) + 1))
    assert len(steps) >= (1 if name in ONE_STEP else 2)
    assert fit.state


# --- Conformance v2 (issue #41, item 2): sensitivities against neighbouring datasets, and the
# accounting recomputed by dp_accounting directly. The replay couples what a release's sum
# holds: RaCO-DP's histogram noises zeros and adds its counts outside the release, so it shows
# no change here and the later gradient sums are coupled only up to the counts' effect on the
# constraint weights (its gradient reaches 1.0000000 of its bound; 1.06 with the noise zeroed).

#: The stated factor: over the adversarial pairs, the largest change of some release comes
#: within this factor of its bound (a bound inflated for nothing shows).
TIGHT = 0.5
#: Methods whose bound the pairs here do not come close to, with the factor stated for them
#: (half the largest ratio measured on 2026-11-28, so that a further doubling shows): their
#: sensitivities are a-priori bounds from a problem's constants over its whole domain (the
#: Lipschitz constant on the ball; bilevel: the inner solution's stability), which rows of one
#: sample do not reach, or (a paper-theorem mode) bound the sensitive attribute's effect by
#: the group counts. Measured: bilevel 0.046-0.106, fixed_omega 0.008, phased_sgd 0.163,
#: dp_sgda 0.404, dpfermi_code 0.361, dp_double_spider_game 0.403 and privatediff_game 0.404 (their
#: anchors, clipped as DP-SGDA's; their differences 0.087 / 0.121 of 2 C shrunk by c movement).
LOOSE: dict[str, float] = {
    **dict.fromkeys(("dp_aid", "dp_bilevel", "dp_bilevel_gd", "dp_bilevel_locgd",
                     "dp_bilevel_locgd_warm", "dp_bilevel_minibatch",
                     "dp_bilevel_minibatch_locsgd"), 0.04),
    "dp_bilevel_pp": 0.02, "fixed_omega": 0.004, "phased_sgd": 0.08, "dp_sgda": 0.2,
    "dp_double_spider_game": 0.2, "privatediff_game": 0.2,
    "dpfermi_code": 0.15}
#: What a replace-one pair may change, in sensitivities of the plan's relation: a sum of
#: contributions bounded by the sensitivity (add-or-remove-one) moves by up to twice it.
REPLACE_ONE_FACTOR = {"add_or_remove_one": 2.0, "replace_one": 1.0,
                      "replace_one_sensitive_attribute": 1.0}
#: The norm each mechanism's sensitivity bounds.
ORDER = {"gaussian": 2, "laplace": 1, "exponential": math.inf}


def _row0(data, x0, y0, s0):
    """``data`` with training row 0 replaced by (x0, y0, s0)."""
    x, y, s = data.x_train.copy(), data.y_train.copy(), data.s_train.copy()
    x[0], y[0], s[0] = x0, y0, s0
    return toy_dataset(x, y, s)


def _far_row0(sample: dict[str, torch.Tensor], n: int, hops: int) -> dict[str, torch.Tensor]:
    """``sample`` with row 0 replaced by a row of the same sample (in the problem's domain):
    the row farthest from row 0 (``hops`` 1), or the row farthest from that one (2)."""
    per_row = {key for key, v in sample.items() if v.dim() and len(v) == n}
    rows = torch.cat([sample[key].reshape(n, -1).double() for key in per_row], 1)
    far = 0
    for _ in range(hops):
        far = int(torch.linalg.vector_norm(rows - rows[far], dim=1).argmax())
    return {key: torch.cat([v[far:far + 1], v[1:]]) if key in per_row else v
            for key, v in sample.items()}


def _neighbours(name: str):
    """Adversarial neighbours of the suite's data, each as a function that installs it (on a
    MonkeyPatch) and returns the dataset to fit. A method that draws its own sample from a
    problem: row 0 replaced by far rows of that sample. Tabular data: row 0 replaced by a row
    10^4 times longer, label and group flipped, pointing either way (contributions clipped in
    opposite directions); in a paper-theorem mode (x and y public), the group flipped only."""
    data = problem()
    if "problem" in METHODS[name].parameters:
        def drawn(patch, hops):
            # every class's own draw, taken before any is patched (a subclass inherits one)
            draws = {cls: cls.sample for cls in (*PROBLEMS.values(), *BILEVEL_PROBLEMS.values())}
            for cls, draw in draws.items():
                patch.setattr(cls, "sample", lambda self, n, generator, draw=draw:
                              _far_row0(draw(self, n, generator), n, hops))
            return data

        return [functools.partial(drawn, hops=hops) for hops in (1, 2)]
    x0, y0, s0 = data.x_train[0], int(data.y_train[0]), int(data.s_train[0])
    if observed(name).plans[0].record["accountant"] in THEOREM_ACCOUNTANTS:
        return [lambda patch: _row0(data, x0, y0, 1 - s0)]
    big = 1.0e4 * x0 / np.linalg.norm(x0)
    return [lambda patch, sign=sign: _row0(data, sign * big, 1 - y0, 1 - s0)
            for sign in (1.0, -1.0)]


def _solver_slack(targets) -> list[float]:
    """How far each run's certified base solver may land from the exact solution on every
    block (:class:`~dpminimax.solvers.Target`: its radius over the root of the largest
    weight)."""
    return [float(target) if isinstance(target, float | int) else target.radius / math.sqrt(max(
        (target.weights or {"": 1.0}).values())) for target in targets]


def _neighbour_record(name: str, neighbour) -> tuple[tuple[list, list], list]:
    """The spy's record of the suite's runs fitted on ``neighbour`` with the suite's outputs
    replayed, and the (perturb index, per-run solver slack) of every base-solver call."""
    record, solves = observed(name).record, []
    original = BaseSolvers.solve
    with pytest.MonkeyPatch.context() as patch:
        data = neighbour(patch)
        spy = ReleaseSpy(patch, replay=record)

        def solve(self, problem, samples, proxes, targets, streams, **options):
            solves.append((len(spy.perturbs), _solver_slack(targets)))
            return original(self, problem, samples, proxes, targets, streams, **options)

        patch.setattr(BaseSolvers, "solve", solve)
        get_method(name).fit(data, runs_of(name), CPU)
    return spy.record, solves


@functools.cache
def neighbour_ratios(name: str) -> dict[str, float]:
    """For every private release, the largest change of its sum between two of the datasets
    (the suite's and its :func:`_neighbours`, the outputs of the suite's fit replayed), plus
    twice the certified radius of the base solver whose output it releases (BYOA: the solver
    may land that far from the exact solution, computed here, on either side), over its
    sensitivity times the replace-one factor of the plan's relation."""
    plan_relation = observed(name).plans[0].record["neighboring_relation"]
    factor = REPLACE_ONE_FACTOR[plan_relation]
    records = [(observed(name).record, None)] + [
        _neighbour_record(name, neighbour) for neighbour in _neighbours(name)]
    ratios: dict[str, float] = defaultdict(float)
    for (first, _), (second, solves) in itertools.combinations(records, 2):
        for kind, (calls, others) in enumerate(zip(first, second, strict=True)):
            for k, ((releases, summed, _), (_, other, _)) in enumerate(
                    zip(calls, others, strict=True)):
                summed, other = _tensors(summed), _tensors(other)
                slack = ([0.0] * len(releases) if kind else next(
                    (s for at, s in reversed(solves) if at <= k), [0.0] * len(releases)))
                for r, release in enumerate(releases):
                    if release.private:
                        change = float(torch.linalg.vector_norm(torch.cat(
                            [(other[key][r] - summed[key][r]).flatten() for key in summed]),
                            ord=ORDER[release.mechanism])) + 2.0 * slack[r]
                        ratios[release.name] = max(ratios[release.name], change / (
                            factor * release.sensitivity))
    return dict(ratios)


@pytest.mark.parametrize("name", PRIVATE)
def test_no_release_moves_between_neighbours_by_more_than_its_sensitivity(name):
    """The sensitivity each release is noised for bounds what one example changes in it."""
    ratios = neighbour_ratios(name)
    assert ratios
    over = {release: round(ratio, 4) for release, ratio in ratios.items()
            if ratio > 1 + 1e-6}
    assert not over, f"change / planned bound between neighbours: {over}"


@pytest.mark.parametrize("name", PRIVATE)
def test_some_release_comes_close_to_its_sensitivity_between_neighbours(name):
    """The adversarial pairs bring some release within :data:`TIGHT` of its bound."""
    ratios = neighbour_ratios(name)
    assert max(ratios.values()) >= LOOSE.get(name, TIGHT), (
        f"largest change / bound between neighbours: {ratios}")


_DIRECT: dict[tuple, float | None] = {}


def _dp_accounting(event, delta: float, accountant: str) -> float | None:
    """dp_accounting's own epsilon of ``event`` under add-or-remove-one (``RdpAccountant`` at
    its default orders, or ``PLDAccountant``), None where it refuses the event; once per
    event (the runs of a method share theirs)."""
    key = (repr(event), delta, accountant)
    if key not in _DIRECT:
        relation = NeighboringRelation.ADD_OR_REMOVE_ONE
        acc = (RdpAccountant(neighboring_relation=relation) if accountant == "rdp"
               else PLDAccountant(relation, value_discretization_interval=1e-4))
        _DIRECT[key] = (float(acc.compose(event).get_epsilon(delta)) if acc.supports(event)
                        else None)
    return _DIRECT[key]


def _gaussian_part(event):
    """``event`` with its Gaussian mechanisms only (less private than the whole); Gaussians
    composed on the same data merged into the one equivalent Gaussian (exact), so that
    dp_accounting's PLD takes a Poisson sample of them."""
    if isinstance(event, dp_event.GaussianDpEvent):
        return event
    if isinstance(event, dp_event.PoissonSampledDpEvent | dp_event.SelfComposedDpEvent):
        inner = _gaussian_part(event.event)
        if isinstance(inner, dp_event.NoOpDpEvent):
            return inner
        return (dp_event.PoissonSampledDpEvent(event.sampling_probability, inner)
                if isinstance(event, dp_event.PoissonSampledDpEvent)
                else dp_event.SelfComposedDpEvent(inner, event.count))
    if isinstance(event, dp_event.ComposedDpEvent):
        parts = [part for part in map(_gaussian_part, event.events)
                 if not isinstance(part, dp_event.NoOpDpEvent)]
        sigmas = [part.noise_multiplier for part in parts
                  if isinstance(part, dp_event.GaussianDpEvent)]
        parts = [part for part in parts if not isinstance(part, dp_event.GaussianDpEvent)] + (
            [dp_event.GaussianDpEvent(math.fsum(s**-2 for s in sigmas) ** -0.5)]
            if sigmas else [])
        return (dp_event.NoOpDpEvent() if not parts else parts[0] if len(parts) == 1
                else dp_event.ComposedDpEvent(parts))
    return dp_event.NoOpDpEvent()


def _unsampled(event):
    """``event`` without its Poisson samples (no amplification: more than the whole)."""
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return _unsampled(event.event)
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return dp_event.SelfComposedDpEvent(_unsampled(event.event), event.count)
    if isinstance(event, dp_event.ComposedDpEvent):
        return dp_event.ComposedDpEvent([_unsampled(part) for part in event.events])
    return event


@pytest.mark.parametrize("name", PRIVATE)
def test_record_is_dp_accountings_epsilon_of_the_derived_event(name):
    """Each record recomputed by another path than the library's accountant: dp_accounting
    directly, within 0.01% (an output release's sensitivity is for replace-one already: its
    Gaussian is accounted as one release of that sensitivity). An event dp_accounting refuses
    (a Laplace or report-noisy-min release inside a Poisson sample) is bracketed: at least
    the PLD epsilon of its Gaussian releases alone, at most the RDP epsilon without the
    sampling's amplification."""
    for plan in observed(name).plans:
        record = plan.record
        if record["accountant"] in THEOREM_ACCOUNTANTS:
            continue
        event, delta = plan.event(), record.get("delta_mechanism", DELTA)
        direct = _dp_accounting(event, delta, record["accountant"])
        if direct is not None:
            assert record["epsilon"] == pytest.approx(direct, rel=1e-4)
            continue
        low = _dp_accounting(_gaussian_part(event), delta, "pld")
        high = _dp_accounting(_unsampled(event), delta, "rdp")
        assert low * (1 - 1e-3) <= record["epsilon"] <= high, (low, record["epsilon"], high)
