"""DP bilevel optimization (Kornowski): Algorithm 1 (full batch) with the rigorous
instantiation, its non-private references and its diagnostics, one program for all.

Per outer step t (Alg. 1): the two inner solutions y~_t ~ y*(x_t) and y~l_t ~ y^lambda(x_t)
(:mod:`.bilevel_inner`: ``op`` or ``loc_gd``), projected onto Y and y~l onto
B(y~, 2 L0f / (lambda mu_g)) (A4; post-processing), then the outer vector of line 4, the
mean of grad_x f_i(x, y~l) + lambda (grad_x g_i(x, y~l) - grad_x g_i(x, y~)) clipped at C_out
(:attr:`~dpminimax.problems.bilevel.BilevelConstants.outer_bound`), released with Gaussian
noise, and the projected step of line 5. The output is x_{t_out}, t_out = argmin_t
||x_{t+1} - x_t|| (lines 7-8).

Privacy (our zCDP split, A1): the zCDP budget rho* = (sqrt(eps + ln(1/delta)) - sqrt(ln(1/delta)))^2
split equally over the 3 T mechanisms (each inner call and each outer release: rho* / (3 T)),
every one a Gaussian release with its replace-one sensitivity (2 C / n for a mean of
contributions bounded by C; released as the sum, sensitivity 2 C). The plan's release tree is
``Repeat((Batch(inner_y, k), Batch(inner_y_lambda, k), Batch(outer)), T)`` and the accountant
derives epsilon from it; the paper's own per-mechanism budget (eps / sqrt(18 T),
delta / (3 (T + 1))) composed by Lemma 2.1 is recorded beside it (``epsilon_paper_accounting``).

Schedule (:func:`outer_schedule`): lambda and T are the parameters ``lam`` and ``outer_steps``
(``schedule: fixed``) or Thm. 4.1's schedule in the dominant regime (``schedule: theory``); the
plan records the values used (``lam``, ``outer_steps``) and calibrates to that T.

Methods (our study), one program: ``dp_bilevel`` (A1-OP), ``dp_bilevel_locgd``
(A1-LocGD), ``dp_bilevel_gd`` (A1-GD: M = 1 round, the ablation), the non-private twins
``np_pen`` (exact inner, sigma 0) and ``np_aid`` (exact hypergradient descent, Eq. (1)), and
the diagnostics :data:`BILEVEL_DIAGNOSTICS` (D1: exact inner + outer noise; D2: private
inner, sigma 0; naive outer: exact inner, outer noise for f's data dependence only). A
diagnostic reads its data through an un-noised release, so its derived epsilon is inf and its
record says the guarantee is not covered.

A1-A22 name the numbered errata and choices of ``papers/bilevel/README.md`` (*Errata*).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import Method, RunPlan, RunSpec, is_non_private, nonprivate_twin
from dpminimax.algorithms.bilevel.bilevel_inner import (
    SUBPROBLEMS,
    LocGdSchedule,
    Subproblem,
    loc_gd,
    loc_gd_schedule,
    localized_radii,
    modulus_shrink,
    outside_ball,
    project_ball,
    solution_lipschitz,
    subproblems,
)
from dpminimax.algorithms.params import ACCOUNTANT, COUNT, NON_NEGATIVE, POSITIVE, Check, one_of
from dpminimax.kernels.clip import clipped_sum
from dpminimax.kernels.sampling import poisson_batches, take_batch
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import (
    Batch,
    BatchedRelease,
    Release,
    Repeat,
    release_counts,
    releases_of,
)
from dpminimax.problems import BILEVEL_PROBLEMS, BilevelProblem, FixedSample, get_bilevel_problem
from dpminimax.problems.base import stack_examples
from dpminimax.seeding import make_generator
from dpminimax.tasks.bilevel import BILEVEL_OPTIMIZATION

RELEASES = ("inner_y", "inner_y_lambda", "outer")
SHARED = ("problem", "instance", "start_gradient", "d_x", "d_y", "n", "outer_steps",
          "inner_steps", "accountant", "schedule", "c_T")
#: Thm. 4.1's schedule multipliers, frozen at the argmin of the pilot's median ||G_{F_S,eta}||
#: (our pilot, papers/bilevel/README.md: experiment e3_pilot, P-A at n = 10^4, epsilon 1, on seeds
#: no evaluation run uses; claim schedule_multipliers_frozen checks that they agree). At
#: n = 10^4, epsilon 1, d_y = 16 they give lambda = 5.36 and T = 4. Tuned on P-A only.
C_LAM, C_T = 0.395, 0.019375


def zcdp_budget(epsilon: float, delta: float) -> float:
    """rho* with rho* + 2 sqrt(rho* ln(1/delta)) = epsilon (the zCDP -> DP conversion)."""
    log = math.log(1.0 / delta)
    return (math.sqrt(epsilon + log) - math.sqrt(log)) ** 2


def paper_epsilon(epsilon: float, delta: float, outer_steps: int) -> float:
    """Alg. 1's own accounting taken literally (Sec. 4, A1): three mechanisms per step at
    (eps / sqrt(18 T), delta / (3 (T + 1))) compose to eps_0 = eps / sqrt(2 T),
    delta_0 = delta / (T + 1), and Lemma 2.1 gives sqrt(2 T ln(1/delta_0)) eps_0 + 2 T eps_0^2
    (about 5.15 at eps 1, delta 1e-5, T 300)."""
    eps_0 = epsilon / math.sqrt(2 * outer_steps)
    delta_0 = delta / (outer_steps + 1)
    return math.sqrt(2 * outer_steps * math.log(1 / delta_0)) * eps_0 + 2 * outer_steps * eps_0 ** 2


def outer_schedule(params: dict[str, Any], epsilon: float, n: int, d_y: int,
                   lambda_min: float) -> dict[str, Any]:
    """A run's lambda and T: ``lam`` and ``outer_steps`` (``schedule: fixed``), or Thm. 4.1's
    schedule in the dominant regime (``theory``): with s = epsilon n / sqrt(d_y), lambda =
    c_lam s^(1/3) raised to ``lambda_min`` where below it (A5; ``lam_raised``) and T =
    ceil(c_T s^(2/3)). The non-private twins have no epsilon: they take epsilon = 1, the
    schedule's n- and d_y-dependence."""
    if params["schedule"] == "fixed":
        return {"lam": float(params["lam"]), "outer_steps": int(params["outer_steps"]),
                "lam_raised": False}
    scale = (1.0 if is_non_private(epsilon) else epsilon) * n / math.sqrt(d_y)
    lam = float(params["c_lam"]) * scale ** (1 / 3)
    return {"lam": max(lam, lambda_min), "outer_steps": math.ceil(float(params["c_T"])
                                                                  * scale ** (2 / 3)),
            "lam_raised": lam < lambda_min}


class DpBilevel(Method):
    """Algorithm 1 with output-perturbation inner solvers (A1-OP; module docstring)."""

    name: ClassVar[str] = "dp_bilevel"
    label: ClassVar[str] = "DP bilevel, Alg. 1 with output-perturbation inner solver (A1-OP)"
    paper: ClassVar[str] = "bilevel"
    source: ClassVar[str] = "paper 002 (DP bilevel), Algs. 1-4 and their references"
    private: ClassVar[bool] = True
    task = BILEVEL_OPTIMIZATION
    uses_sensitive_attribute: ClassVar[bool] = False
    parameters: ClassVar[dict[str, Any]] = {
        "problem": "pa_linear_response", "instance": 0, "start_gradient": 0.0, "d_x": 4,
        "d_y": 16, "n": 1000,
        "outer_steps": 100, "lam": 10.0, "eta": 0.1, "inner_steps": 0, "gamma": 0.05,
        "accountant": "rdp", "schedule": "fixed", "c_lam": C_LAM, "c_T": C_T}
    checks: ClassVar[dict[str, Check]] = {
        "problem": one_of(*BILEVEL_PROBLEMS), "instance": NON_NEGATIVE,
        "start_gradient": NON_NEGATIVE, "d_x": COUNT,
        "d_y": COUNT, "n": COUNT, "outer_steps": COUNT, "lam": POSITIVE, "eta": POSITIVE,
        "inner_steps": NON_NEGATIVE, "gamma": POSITIVE, "accountant": ACCOUNTANT,
        "schedule": one_of("fixed", "theory"), "c_lam": POSITIVE, "c_T": POSITIVE}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED
    #: The neighbouring relation the sensitivities are for (A16: replace one example).
    neighboring: ClassVar[str] = "replace_one"
    #: The variant: inner solver (op, loc_gd, exact), outer noise (full: Alg. 1; none: sigma 0;
    #: upper_only: calibrated to f's data dependence only; public: none, on a problem whose
    #: outer vector reads no data, the budget split over the inner calls, our correction of Sec.
    #: 7's rule), outer vector (penalty: Eq. (3) at the inner solutions; aid: Eq. (1) at the
    #: released y~, no y~l, DP-AID, exact for NP-AID),
    #: DP-Loc-GD's rounds M (0: A8's M), the step's sign (-1: descent, line 5; +1: the
    #: ascent of Section 7's closed form as printed, A10) and whether DP-Loc-GD starts each
    #: call from the previous release (A7's warm start) instead of y0.
    fixed: ClassVar[dict[str, Any]] = {"inner": "op", "outer": "full", "gradient": "penalty",
                                       "inner_rounds": 0, "step_sign": -1,
                                       "warm_start": False}

    @staticmethod
    def problem(params: dict[str, Any]) -> BilevelProblem:
        """The instance (``instance``) of ``problem`` in dimensions (``d_x``, ``d_y``); a
        ``start_gradient`` > 0 (P-A only) holds ||grad F_P(x0)|| at it across dimensions."""
        start = float(params.get("start_gradient", 0.0))
        if start > 0 and params["problem"] != "pa_linear_response":
            raise ValueError("start_gradient is a parameter of pa_linear_response only; got "
                             f"problem {params['problem']!r}")
        return _problem(str(params["problem"]), int(params["instance"]), int(params["d_x"]),
                        int(params["d_y"]), start)

    def sample_size(self, data: FixedSample | None, shared: dict[str, Any]) -> int:
        return data.n if isinstance(data, FixedSample) else int(shared["n"])

    def plan(self, run: RunSpec, n: int, data: FixedSample | None = None) -> RunPlan:
        """The release tree of the module docstring at the schedule's lambda and T (recorded),
        its record (replace-one) with the zCDP budget, the paper's epsilon and whether the
        target is met."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        constants = problem.constants
        planned = outer_schedule(params, run.epsilon, n, problem.y.dim, constants.lambda_min)
        params |= planned
        lam, steps = planned["lam"], planned["outer_steps"]
        if lam < constants.lambda_min:
            raise ValueError(f"method {self.name!r}: lam = {lam:g} is below the smallest "
                             f"penalty the lemmas allow (A5): {constants.lambda_min:g}")
        if params["warm_start"] and params["inner"] not in ("loc_gd", "loc_sgd"):
            raise ValueError(f"method {self.name!r}: a warm start (A7) needs DP-Loc-GD inner "
                             f"calls, not {params['inner']!r}")
        public, aid = params["outer"] == "public", params["gradient"] == "aid"
        if public and not problem.outer_is_public:
            raise ValueError(f"method {self.name!r}: problem {params['problem']!r} has an outer "
                             "vector that reads the data; only a problem whose outer vector is "
                             "post-processing (Section 7) may skip the outer noise")
        mechanisms = (2 if public or aid else 3) * steps
        rho = self.calibrate(run, lambda: zcdp_budget(run.epsilon, run.delta) / mechanisms,
                             0.0)
        schedules = inner_schedules(problem, params, n, run.epsilon, rho)
        inner_rate = self.inner_sampling(params, n)
        inner = [Batch((inner_release(f"inner_{name}", params["inner"], sub, n, rho,
                                      schedules.get(name)),),
                       schedules[name].rounds * schedules[name].steps if name in schedules
                       else 1, inner_rate)
                 for name, sub in subproblems(constants, lam).items()
                 if not (aid and name == "y_lambda")]
        outer, extra = ((), {}) if public else self.outer_part(problem, params, rho, aid, n)
        tree = Repeat((*inner, *outer), steps)
        values = {**planned, "rho_per_mechanism": rho, "outer_bound": constants.outer_bound,
                  "lambda_min": constants.lambda_min, **extra}
        for name, schedule in schedules.items():
            values |= {f"loc_gd_rounds_{name}": schedule.rounds,
                       f"loc_gd_steps_{name}": schedule.steps,
                       f"loc_gd_error_bound_{name}": schedule.error_bound}
        if inner_rate is not None:
            values["sampling_rate_inner"] = inner_rate
        tree, values = self.calibrated(tree, values, run, params["accountant"])
        plan = RunPlan.account(tree, values, run.delta, params["accountant"])
        paper_steps = None if aid else steps  # DP-AID is not the paper's algorithm
        return RunPlan(tree, plan.values, plan.record | self.guarantee(run, tree, plan,
                                                                       paper_steps))

    def inner_sampling(self, params: dict[str, Any], n: int) -> float | None:
        """The inner calls' Poisson sampling rate (None: full batch, Alg. 1)."""
        return None

    def calibrated(self, tree: Repeat, values: dict[str, Any], run: RunSpec,
                   accountant: str) -> tuple[Repeat, dict[str, Any]]:
        """The release tree as spent (Alg. 1: the zCDP split itself)."""
        return tree, values

    def outer_part(self, problem: BilevelProblem, params: dict[str, Any], rho: float,
                   aid: bool, n: int) -> tuple[tuple[Batch, ...], dict[str, Any]]:
        """The outer release of one step (full batch, zCDP cost ``rho``) and planned values."""
        return (Batch((outer_release(problem, params["outer"], rho, aid),)),), {}

    def guarantee(self, run: RunSpec, tree: Repeat, plan: RunPlan,
                  steps: int | None) -> dict[str, Any]:
        """The record's replace-one relation, zCDP budget and paper epsilon (for a finite
        target and Alg. 1's ``steps``), and whether the target is met, with the reason where
        it is not."""
        spent = plan.record["epsilon"]
        extras: dict[str, Any] = {"neighboring_relation": self.neighboring}
        if steps is not None and not is_non_private(run.epsilon):
            extras |= {"zcdp_rho": zcdp_budget(run.epsilon, run.delta),
                       "epsilon_paper_accounting": paper_epsilon(run.epsilon, run.delta, steps),
                       "paper_delta": run.delta}
        covered = not self.private or spent <= run.epsilon * (1 + 1e-9)
        extras["guarantee_covered"] = covered
        if not covered:
            bare = sorted({r.name for r in releases_of(tree) if not r.private})
            extras["guarantee_not_covered"] = [
                f"epsilon {spent:g} > target {run.epsilon:g}: releases {bare} read the data "
                "without noise, so the run is NOT private"]
        return extras

    def program(self, data: FixedSample | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> BilevelProgram:
        problem = self.problem(shared)
        return BilevelProgram(problem, run_samples(problem, data, runs, shared, device), runs,
                              resolved, plans, device)


def run_samples(problem: BilevelProblem, data: FixedSample | None, runs: Sequence[RunSpec],
                shared: dict[str, Any], device: torch.device) -> list[dict[str, torch.Tensor]]:
    """Each run's sample: the fixed one, or its own draw of ``n`` examples from its seed."""
    if isinstance(data, FixedSample):
        return [{k: v.to(device) for k, v in data.examples.items()} for _ in runs]
    return [{k: v.to(device) for k, v in problem.sample(
        int(shared["n"]), make_generator(run.seed, "data")).items()} for run in runs]


class DpBilevelLocGd(DpBilevel):
    """Algorithm 1 with DP-Loc-GD inner solvers (A1-LocGD)."""

    name: ClassVar[str] = "dp_bilevel_locgd"
    label: ClassVar[str] = "DP bilevel, Alg. 1 with DP-Loc-GD inner solver (A1-LocGD)"
    fixed: ClassVar[dict[str, Any]] = {**DpBilevel.fixed, "inner": "loc_gd"}


class DpBilevelLocGdWarm(DpBilevelLocGd):
    """A1-LocGD with A7's warm start (our ablation): each DP-Loc-GD call after the
    first starts from the previous call's release (post-processing) with R_0 = R_M + Lip
    ||x_t - x_{t-1}||, R_M the previous call's high-probability error bound (Alg. 2's analysis) and
    Lip that of the solution map (y*: L1g / mu_g; y^lambda: 4 L1g / mu_g, Lemma 8.4); the later
    radii follow Alg. 2's analysis from it. The noise and the privacy plan are A1-LocGD's: the
    radii and the start are public functions of released values."""

    name: ClassVar[str] = "dp_bilevel_locgd_warm"
    label: ClassVar[str] = "DP bilevel, Alg. 1 with DP-Loc-GD, warm-started (A7)"
    fixed: ClassVar[dict[str, Any]] = {**DpBilevelLocGd.fixed, "warm_start": True}


class DpBilevelGd(DpBilevelLocGd):
    """Algorithm 1 with non-localized DP-GD inner solvers (A1-GD, our ablation):
    DP-Loc-GD with M = 1 round, its steps projected onto B(y0, R_0) throughout."""

    name: ClassVar[str] = "dp_bilevel_gd"
    label: ClassVar[str] = "DP bilevel, Alg. 1 with DP-GD inner solver, M = 1 (A1-GD)"
    fixed: ClassVar[dict[str, Any]] = {**DpBilevelLocGd.fixed, "inner_rounds": 1}


class DpBilevelMinibatch(DpBilevel):
    """Algorithm 3 (mini-batch DP bilevel, §5) with output-perturbation inner solvers: line 4's
    outer vector is the mean over a Poisson(b_out / n) batch (A12: Poisson sampling in place of
    b_out draws with replacement) of the examples' vectors clipped at C_out, normalised by the
    expected batch size b_out, under add-or-remove-one neighbours (the subsampled Gaussian's
    own relation; the OP inner releases' 2 L / (mu n) holds under it too). Noise: Alg. 1's
    zCDP split sets each release's share; the full-batch releases keep theirs and one factor
    c on the noise multipliers of the subsampled ones, the smallest meeting the target with
    the RDP accountant, spends the amplification by subsampling (``noise_scale``)."""

    name: ClassVar[str] = "dp_bilevel_minibatch"
    label: ClassVar[str] = "DP bilevel, Alg. 3 (mini-batch outer, OP inner)"
    parameters: ClassVar[dict[str, Any]] = {**DpBilevel.parameters, "batch_out": 64}
    checks: ClassVar[dict[str, Check]] = {**DpBilevel.checks, "batch_out": COUNT}
    neighboring: ClassVar[str] = "add_or_remove_one"

    def outer_part(self, problem: BilevelProblem, params: dict[str, Any], rho: float,
                   aid: bool, n: int) -> tuple[tuple[Batch, ...], dict[str, Any]]:
        """One Poisson(q) batch per step, its clipped sum released with sensitivity C_out."""
        rate = poisson_rate(int(params["batch_out"]), n)
        release = Release("outer", "gaussian", multiplier(rho), problem.constants.outer_bound)
        return (Batch((release,), 1, rate),), {"sampling_rate": 1.0 if rate is None else rate}

    def calibrated(self, tree: Repeat, values: dict[str, Any], run: RunSpec,
                   accountant: str) -> tuple[Repeat, dict[str, Any]]:
        """The subsampled releases' noise multipliers times the smallest c meeting the target
        (1 where nothing is subsampled)."""
        sampled = any(part.sampling_rate is not None for part in tree.parts)
        scale = self.calibrate(run, lambda: calibrate_release_parameter(
            lambda c: scaled(tree, c), run.epsilon, run.delta, accountant),
            1.0) if sampled else 1.0
        return scaled(tree, scale), {**values, "noise_scale": scale}


class DpBilevelMinibatchLocSgd(DpBilevelMinibatch):
    """Algorithm 3 with DP-Loc-SGD inner solvers (Algorithm 4): Algorithm 2's rounds, radii
    and steps with each step's gradient the mean over a Poisson(b_in / n) batch (normalised by
    b_in) of the examples' gradients clipped at L (sensitivity L, add-or-remove-one). The radii
    are the full-batch ones of Alg. 2's analysis: projecting is post-processing, so privacy does
    not rest on them; the sampling noise they omit can only cost accuracy."""

    name: ClassVar[str] = "dp_bilevel_minibatch_locsgd"
    label: ClassVar[str] = "DP bilevel, Alg. 3 with DP-Loc-SGD inner (Alg. 4)"
    parameters: ClassVar[dict[str, Any]] = {**DpBilevelMinibatch.parameters, "batch_in": 64,
                                            "inner_steps": 50}
    checks: ClassVar[dict[str, Check]] = {**DpBilevelMinibatch.checks, "batch_in": COUNT}
    fixed: ClassVar[dict[str, Any]] = {**DpBilevelMinibatch.fixed, "inner": "loc_sgd"}

    def inner_sampling(self, params: dict[str, Any], n: int) -> float | None:
        return poisson_rate(int(params["batch_in"]), n)


def poisson_rate(batch: int, n: int) -> float | None:
    """The Poisson sampling rate of an expected batch of ``batch`` among ``n`` examples (None:
    the full batch, ``batch >= n``)."""
    return batch / n if batch < n else None


def scaled(part, factor: float):
    """A release tree with the noise multipliers of its subsampled batches times ``factor``."""
    if isinstance(part, Repeat):
        return Repeat(tuple(scaled(p, factor) for p in part.parts), part.count)
    if part.sampling_rate is None:
        return part
    return Batch(tuple(replace(r, noise_multiplier=r.noise_multiplier * factor)
                       for r in part.releases), part.count, part.sampling_rate)


class DpAid(DpBilevel):
    """DP-AID (our derived baseline): per outer step one private inner solution y~ (output
    perturbation) and Eq. (1)'s hypergradient at it, released with Gaussian noise of
    replace-one sensitivity 2 C_AID / n (:attr:`BilevelConstants.aid_bound`); the budget is
    split over the 2 T releases. Its bias has no lambda factor: the price of Alg. 1 being
    first-order."""

    name: ClassVar[str] = "dp_aid"
    label: ClassVar[str] = "DP-AID: private inner + Hessian-based hypergradient (Eq. (1))"
    fixed: ClassVar[dict[str, Any]] = {**DpBilevel.fixed, "gradient": "aid"}


#: Section 7's defaults: P-C ridge tuning (d_x = 1, d_y = 10), lambda above its
#: lambda_min (A5: 1,300 at omega_min = 0.02), eta = 3 (A3: |F_S''| <= 3.1 over the interval
#: on pilot samples of n = 1000, larger near omega_min; 1 / (2 L) = 0.16 converges too slowly
#: in the flat region, eta = 10 oscillates) and T = 50.
TUNING = {"problem": "pc_ridge_tuning", "d_x": 1, "d_y": 10, "lam": 1500.0, "eta": 3.0,
          "outer_steps": 50}


class DpBilevelPublicOuter(DpBilevel):
    """Alg. 1 (A1-OP) on a problem whose outer vector reads no data (Section 7): the outer step
    is post-processing of the two inner releases, so it takes no noise and the budget is split
    over the 2 T inner calls (our correction of Sec. 7's rule)."""

    name: ClassVar[str] = "dp_bilevel_pp"
    label: ClassVar[str] = "DP bilevel, Alg. 1 (A1-OP), outer step as post-processing (σ = 0)"
    parameters: ClassVar[dict[str, Any]] = {**DpBilevel.parameters, **TUNING}
    fixed: ClassVar[dict[str, Any]] = {**DpBilevel.fixed, "outer": "public"}


def inner_schedules(problem: BilevelProblem, params: dict[str, Any], n: int, epsilon: float,
                    rho: float) -> dict[str, LocGdSchedule]:
    """Each subproblem's DP-Loc-GD schedule (none unless the inner solver is ``loc_gd``):
    eps' = eps / sqrt(18 T) (for M, A8, unless ``inner_rounds``), gamma / (4 T) per call
    (Alg. 2's analysis), its T_GD unless ``inner_steps``."""
    if params["inner"] not in ("loc_gd", "loc_sgd"):
        return {}
    steps = int(params["outer_steps"])
    return {name: loc_gd_schedule(sub, n, problem.y.dim, rho, epsilon / math.sqrt(18 * steps),
                                  float(params["gamma"]) / (4 * steps),
                                  int(params["inner_steps"]) or None,
                                  int(params["inner_rounds"]) or None)
            for name, sub in subproblems(problem.constants, float(params["lam"])).items()}


def inner_release(name: str, inner: str, sub: Subproblem, n: int, rho: float,
                  schedule: LocGdSchedule | None) -> Release:
    """An inner call's release: the exact solution un-noised (``exact``: not private), the
    solution with replace-one sensitivity 2 L / (mu n) (``op``), each DP-Loc-GD step's
    gradient sum with sensitivity 2 L (``loc_gd``), or each DP-Loc-SGD step's batch sum with
    add-or-remove-one sensitivity L (``loc_sgd``), at zCDP cost ``rho`` per call."""
    if inner == "exact":
        return Release(name, "gaussian", 0.0, math.inf)
    if inner == "op":
        return Release(name, "gaussian", multiplier(rho), sub.output_sensitivity(n))
    assert schedule is not None
    if inner == "loc_sgd":  # a Poisson batch's clipped sum, add-or-remove-one (Alg. 4)
        return Release(name, "gaussian", schedule.multiplier, sub.lipschitz)
    return Release(name, "gaussian", schedule.multiplier, 2.0 * sub.lipschitz,
                   clip=sub.lipschitz)


def outer_release(problem: BilevelProblem, outer: str, rho: float, aid: bool = False
                  ) -> Release:
    """The outer sum's release: sensitivity 2 C_out (2 C_AID for DP-AID's n Eq. (1)), each
    example's vector clipped at half of it (replace-one), at cost ``rho`` (``full``), no noise
    (``none``, D2), or noise for the data dependence of grad_x f alone with nothing clipped
    (``upper_only``, the naive outer step, our attack's M2: none on P-A and P-D, whose grad_x f
    reads no data)."""
    constants = problem.constants
    bound = 2.0 * (constants.aid_bound if aid else constants.outer_bound)
    if outer == "upper_only":
        upper = 2.0 * problem.upper_data_bound
        return (Release("outer", "gaussian", multiplier(rho), upper, math.inf) if upper > 0
                else Release("outer", "gaussian", 0.0, math.inf))
    return Release("outer", "gaussian", multiplier(rho) if outer == "full" else 0.0, bound,
                   bound / 2.0)


def multiplier(rho: float) -> float:
    """A Gaussian (or report-noisy-min) release costing zCDP ``rho``: noise / sensitivity =
    1 / sqrt(2 rho)."""
    return 1.0 / math.sqrt(2.0 * rho) if rho > 0 else 0.0


class _WarmStart:
    """A7's warm start for R runs (:class:`DpBilevelLocGdWarm`): the previous call's release
    and x per subproblem, and the radii of a call started there."""

    def __init__(self, problem: BilevelProblem, subs: Sequence[dict[str, Subproblem]],
                 schedules: Sequence[dict[str, LocGdSchedule]], n: int, steps: int,
                 resolved: Sequence[dict[str, Any]], device: torch.device) -> None:
        self.problem, self.subs, self.schedules, self.n = problem, subs, schedules, n
        self.gammas = [float(p["gamma"]) / (4 * steps) for p in resolved]
        self.device = device
        self.previous: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def start(self, name: str, x: torch.Tensor, cold: torch.Tensor, radii: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """(y0, radii) of this call: the cold ones on the first call, else the previous
        release with R_0 = R_M + Lip ||x - x_prev||."""
        if name not in self.previous:
            return cold, radii
        released, x_prev = self.previous[name]
        lipschitz = solution_lipschitz(self.problem.constants, name)
        moved = torch.linalg.vector_norm(x - x_prev, dim=-1).tolist()
        warm = [localized_radii(subs[name], self.n, self.problem.y.dim, gamma,
                                schedule[name].rounds, schedule[name].steps,
                                schedule[name].multiplier,
                                schedule[name].error_bound + lipschitz * step)[:-1]
                for subs, schedule, gamma, step in zip(self.subs, self.schedules,
                                                       self.gammas, moved, strict=True)]
        return released, torch.tensor(warm, dtype=radii.dtype, device=self.device)

    def remember(self, name: str, x: torch.Tensor, released: torch.Tensor) -> None:
        self.previous[name] = (released, x)


class BilevelProgram:
    """R runs of Alg. 1 (module docstring); one :meth:`step` is one outer iteration. ``state``
    is the output x_{t_out}; ``counters`` are each run's largest inner errors and bias
    ||g_t - grad L*_lambda(x_t)|| over the steps and how often our outer projection (A4) was
    active (evaluation only: they read the exact inner solutions). ``released`` holds the last
    step's inner releases y~ and y~l, projected onto Y (post-processing), before A4's
    projection (what an attack on the releases reads)."""

    def __init__(self, problem: BilevelProblem, samples: list[dict[str, torch.Tensor]],
                 runs: Sequence[RunSpec], resolved: Sequence[dict[str, Any]],
                 plans: Sequence[RunPlan], device: torch.device) -> None:
        self.model, self.samples = problem, samples
        self.examples = stack_examples(samples)
        self.stats = problem.statistics(self.examples)
        self.n = len(next(iter(samples[0].values())))
        first = resolved[0]
        self.inner, self.gradient = first["inner"], first["gradient"]
        self.public_outer, self.sign = first["outer"] == "public", float(first["step_sign"])
        steps = {int(p["outer_steps"]) for p in resolved}
        if len(steps) != 1:
            raise ValueError("the runs of one program must share the outer step count T; got "
                             f"{sorted(steps)} (schedule: theory plans T from epsilon: one "
                             "epsilon per job)")
        self.steps = steps.pop()
        self.lam = self._tensor([p["lam"] for p in resolved], device)
        self.eta = self._tensor([p["eta"] for p in resolved], device)
        constants = problem.constants
        self.y_radius = 2.0 * constants.l0f / (self.lam * constants.mu_g)
        #: each run's outer sampling rate (Alg. 3; 1: the full batch of Alg. 1)
        self.rate = self._tensor([plan.values.get("sampling_rate", 1.0) for plan in plans],
                                 device)
        self.sampling = [make_generator(run.seed, "poisson", device) for run in runs]
        planned = [name for name in RELEASES if name in release_counts(plans[0].releases)]
        self.releases = {name: BatchedRelease([plan.release(name) for plan in plans], device,
                                              problem.dtype)
                         for name in planned}
        self.noise = {name: [make_generator(run.seed, f"noise_{name}", device) for run in runs]
                      for name in planned}
        subs = [subproblems(constants, float(p["lam"])) for p in resolved]
        self.mu = {name: self._tensor([s[name].mu for s in subs], device) for name in SUBPROBLEMS}
        self.radii: dict[str, torch.Tensor] = {}
        self.inner_steps: dict[str, int] = {}
        self.inner_rate = self._tensor([plan.values.get("sampling_rate_inner", 1.0)
                                        for plan in plans], device)
        self.inner_sampling = [make_generator(run.seed, "poisson_inner", device)
                               for run in runs]
        self.warm: _WarmStart | None = None
        if self.inner in ("loc_gd", "loc_sgd"):
            schedules = [inner_schedules(problem, p, self.n, run.epsilon,
                                         plan.values["rho_per_mechanism"])
                         for p, run, plan in zip(resolved, runs, plans, strict=True)]
            for name in SUBPROBLEMS:
                shapes = {(s[name].rounds, s[name].steps) for s in schedules}
                if len(shapes) != 1:
                    raise ValueError("the runs of one program must share DP-Loc-GD's rounds "
                                     f"and steps; got {sorted(shapes)} (one epsilon per job)")
                self.inner_steps[name] = shapes.pop()[1]
            self.radii = {name: torch.tensor([s[name].radii for s in schedules],
                                             dtype=problem.dtype, device=device)
                          for name in SUBPROBLEMS}
            self.warm = _WarmStart(problem, subs, schedules, self.n, self.steps, resolved,
                                   device) if first["warm_start"] else None
        runs_count = len(runs)
        self.x = torch.zeros(runs_count, problem.x.dim, dtype=problem.dtype, device=device)
        self.x_out, self.x_random = self.x.clone(), self.x.clone()
        self.best = torch.full((runs_count,), math.inf, dtype=problem.dtype, device=device)
        #: each run's uniformly random output step (our output-rule ablation, E9)
        self.random_step = torch.tensor([int(torch.randint(
            self.steps, (1,), generator=make_generator(run.seed, "output"))) for run in runs],
            device=device)
        self.t = 0
        self.released: dict[str, torch.Tensor] = {}
        keys = (("inner_error_max", "bias_max") if self.gradient == "aid" else
                ("inner_error_max", "inner_error_lambda_max", "bias_max",
                 "projection_active_rate"))
        self.diagnostics = {key: torch.zeros(runs_count, dtype=problem.dtype, device=device)
                            for key in keys}

    def _tensor(self, values: list[float], device: torch.device) -> torch.Tensor:
        return torch.tensor(values, dtype=self.model.dtype, device=device)

    @property
    def state(self) -> dict[str, torch.Tensor]:
        """The output x_{t_out} (lines 7-8) and, for the output-rule ablation, the last
        iterate x_T and a uniformly random iterate x_t, t ~ U{0..T-1}."""
        return {"x": self.x_out, "x_last": self.x, "x_random": self.x_random}

    @property
    def counters(self) -> list[dict[str, float]]:
        return [{key: float(value[r]) for key, value in self.diagnostics.items()}
                for r in range(len(self.x))]

    def _example_grads(self, name: str, x: torch.Tensor):
        """The examples' y-gradients of subproblem ``name`` at x, as a function of y."""
        problem = self.model

        def grads(y: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
            examples = self.examples if index is None else take_batch(self.examples, index)
            lower = problem.per_example_grad("g", "y", x, y, examples)
            if name == "y":
                return lower
            upper = problem.per_example_grad("f", "y", x, y, examples)
            return upper + self.lam.view(-1, 1, 1) * lower
        return grads

    def _solve(self, name: str, x: torch.Tensor) -> torch.Tensor:
        """One inner call of Alg. 1 line 3 (its release is ``inner_<name>``)."""
        release, noise = self.releases[f"inner_{name}"], self.noise[f"inner_{name}"]
        if self.inner in ("loc_gd", "loc_sgd"):
            start = x.new_zeros(len(x), self.model.y.dim)  # y0 = 0, the centre of Y
            radii = self.radii[name]
            if self.warm is not None:
                start, radii = self.warm.start(name, x, start, radii)
            sampler = None
            if self.inner == "loc_sgd" and bool((self.inner_rate < 1.0).any()):
                def sampler():
                    return poisson_batches(self.n, self.inner_rate.tolist(),
                                           self.inner_sampling, x.device)
            released = loc_gd(self._example_grads(name, x), start, self.mu[name],
                              radii, self.inner_steps[name], release, noise,
                              sampler, self.inner_rate * self.n)
            if self.warm is not None:
                self.warm.remember(name, x, released)
            return released
        exact = (self.model.inner_solution(x, self.stats) if name == "y"
                 else self.model.penalty_solution(x, self.lam, self.stats))
        return self.shrunk(release, name, x).perturb(exact, noise)

    def shrunk(self, release: BatchedRelease, name: str, x: torch.Tensor) -> BatchedRelease:
        """An output-perturbation release scaled to the modulus of g(x, .) at the runs' x (a
        public function of released values; the plan's noise multiplier is kept)."""
        modulus = self.model.lower_modulus(x)
        if bool((modulus <= self.model.constants.mu_g).all()):
            return release
        return release.shrunk(modulus_shrink(self.model.constants, name, modulus, self.lam))

    def _outer_sum(self, x: torch.Tensor, y: torch.Tensor, y_lambda: torch.Tensor
                   ) -> torch.Tensor:
        """Alg. 1 line 4 before noise, summed over the examples (Alg. 3: over each run's
        Poisson batch): Eq. (3)'s per-example vectors clipped at the outer release's C_out."""
        problem, examples, mask, copies = self.model, self.examples, None, 1
        if bool((self.rate < 1.0).any()):
            index, mask = poisson_batches(self.n, self.rate.tolist(), self.sampling,
                                          x.device)
            examples = take_batch(examples, index)
        elif problem.outer_vector_shared:
            examples, copies = {k: v[:, :1] for k, v in examples.items()}, self.n
        vectors = (problem.per_example_grad("f", "x", x, y_lambda, examples)
                   + problem.per_example_penalty_x(x, y_lambda, y, self.lam, examples))
        return copies * clipped_sum(vectors, self.releases["outer"].clip, mask)

    def step(self) -> None:
        problem, x = self.model, self.x
        y = problem.y.project(self._solve("y", x))
        self.released = {"y": y}
        y_lambda = projected = None
        if self.gradient == "aid":  # Eq. (1) at the released y~ (DP-AID; NP-AID at y*)
            total = self.n * problem.hypergradient_at(x, y, self.stats)
        else:
            unprojected = problem.y.project(self._solve("y_lambda", x))
            self.released["y_lambda"] = unprojected
            y_lambda = project_ball(unprojected, y, self.y_radius)
            projected = outside_ball(unprojected, y, self.y_radius)
            total = (self.n * problem.public_outer(x, y, y_lambda, self.lam) if self.public_outer
                     else self._outer_sum(x, y, y_lambda))
        # Section 7's outer vector is post-processing of the inner releases (A14); a
        # mini-batch sum is normalised by its expected size q n (Alg. 3)
        scale = (self.rate * self.n).unsqueeze(-1)
        direction = (total if self.public_outer else
                     self.releases["outer"].perturb(total, self.noise["outer"])) / scale
        x_next = problem.x.project(x + self.sign * self.eta.unsqueeze(-1) * direction)
        move = torch.linalg.vector_norm(x_next - x, dim=-1)
        better = move < self.best
        self.x_out = torch.where(better.unsqueeze(-1), x, self.x_out)
        self.best = torch.where(better, move, self.best)
        self.x_random = torch.where((self.random_step == self.t).unsqueeze(-1), x,
                                    self.x_random)
        self._diagnose(x, y, y_lambda, total / scale, projected)
        self.x, self.t = x_next, self.t + 1

    def _diagnose(self, x: torch.Tensor, y: torch.Tensor, y_lambda: torch.Tensor | None,
                  mean: torch.Tensor, projected: torch.Tensor | None) -> None:
        """The inner errors and the bias against what the outer vector estimates: the penalty
        gradient of Eq. (3) (Alg. 1), or the hypergradient (AID, no y~l)."""
        problem, stats, d = self.model, self.stats, self.diagnostics
        values = {"inner_error_max": y - problem.inner_solution(x, stats)}
        if y_lambda is None:
            values["bias_max"] = mean - problem.hypergradient(x, stats)
        else:
            values |= {"inner_error_lambda_max": y_lambda - problem.penalty_solution(
                x, self.lam, stats), "bias_max": mean - problem.penalty_gradient(
                x, self.lam, stats)}
            d["projection_active_rate"] += projected.to(d["projection_active_rate"]
                                                        ) / self.steps
        for key, value in values.items():
            d[key] = torch.maximum(d[key], torch.linalg.vector_norm(value, dim=-1))


@functools.lru_cache(maxsize=64)
def _problem(name: str, instance: int, d_x: int, d_y: int, start: float) -> BilevelProblem:
    extra = {"start_gradient": start} if start > 0 else {}
    return get_bilevel_problem(name, d_x=d_x, d_y=d_y, seed=instance, **extra)


NpPen = nonprivate_twin(
    DpBilevel, "NpPen", name="np_pen", label="Non-private penalty method (NP-Pen)",
    doc="Alg. 1 with exact inner solutions and sigma 0 (Kwon et al. / Chen et al.).",
    fixed={"inner": "exact"})
NpAid = nonprivate_twin(
    DpBilevel, "NpAid", name="np_aid", label="Non-private exact hypergradient descent (NP-AID)",
    doc="Projected descent on the exact hypergradient of Eq. (1): the best reachable "
        "stationarity.",
    fixed={"inner": "exact", "gradient": "aid"})


class Sec7PaperSign(NpPen):
    """Section 7's closed form as printed (A10): N(R(y~l) - R(y~), .) added to omega, i.e. the
    penalty method's step with the mean negated (gradient ascent), with exact inner solutions;
    beside NP-Pen it shows the sign error."""

    name: ClassVar[str] = "sec7_paper_sign"
    label: ClassVar[str] = "Section 7 as printed: exact inner, the step's sign flipped (A10)"
    parameters: ClassVar[dict[str, Any]] = {**NpPen.parameters, **TUNING}
    fixed: ClassVar[dict[str, Any]] = {**NpPen.fixed, "outer": "public", "step_sign": 1}


class BilevelD1(DpBilevel):
    """D1: exact inner solutions + Alg. 1's outer noise (isolates the d_x term; NOT private)."""

    name: ClassVar[str] = "bilevel_d1"
    label: ClassVar[str] = "Diagnostic D1: exact inner + outer noise (not private)"
    fixed: ClassVar[dict[str, Any]] = {**DpBilevel.fixed, "inner": "exact"}


class BilevelD2(DpBilevel):
    """D2: private (OP) inner solutions + sigma 0 (isolates the d_y term; NOT private)."""

    name: ClassVar[str] = "bilevel_d2"
    label: ClassVar[str] = "Diagnostic D2: private inner + no outer noise (not private)"
    fixed: ClassVar[dict[str, Any]] = {**DpBilevel.fixed, "outer": "none"}


class NaiveOuter(DpBilevel):
    """Naive outer (our attack's M2): exact inner solutions, outer noise calibrated to f's data
    dependence only; its record shows the leak (epsilon inf, guarantee not covered)."""

    name: ClassVar[str] = "bilevel_naive_outer"
    label: ClassVar[str] = "Naive outer noise with exact inner solutions (NOT private)"
    fixed: ClassVar[dict[str, Any]] = {**DpBilevel.fixed, "inner": "exact",
                                       "outer": "upper_only"}


#: The diagnostics: they take a privacy target but are not private (outside
#: :data:`dpminimax.algorithms.METHODS`, whose conformance suite requires what they lack).
BILEVEL_DIAGNOSTICS: dict[str, type[DpBilevel]] = {
    cls.name: cls for cls in (BilevelD1, BilevelD2, NaiveOuter)}
