"""Output perturbation: BYOA (paper 003) Algorithm 1 (strongly convex minimization) and
Algorithm 3 (SC-SC min-max), and the exact non-private solution (the
reference every private error is measured against).

Each run solves its empirical problem with the base solver ``solver`` (``exact``, or an
iterative solver stopped by a deterministic certificate at the accuracy of Alg. 1 line 1 or
Alg. 3's (3); see :func:`output_target`) and releases every block once with Gaussian noise under
the paper's replace-one sensitivities: Delta = 4 L / (mu n) (Alg. 1), Delta_b = (4 L / n)
sqrt(1 / (mu_b mu)) for b in (x, y) (Alg. 3). ``sigma="paper"`` uses the paper's multiplier,
``sigma="calibrated"`` the smallest one that meets (epsilon, delta / 2) by our accountant.

Derivation and choices: papers/byoa/NOTES.md, section "Output perturbation, Algorithms 1 and 3".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.minimax.utility_bounds import output_perturbation_bounds
from dpminimax.algorithms.params import ACCOUNTANT, FLAG, Check, one_of
from dpminimax.algorithms.problem_method import (
    PROBLEM_CHECKS,
    PROBLEM_PARAMETERS,
    PROBLEM_SHARED,
    ProblemMethod,
)
from dpminimax.data import PreparedDataset
from dpminimax.privacy import epsilon
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import Batch, BatchedRelease, Part, Release, plan_event
from dpminimax.problems import Constants, Problem
from dpminimax.problems.base import Prox
from dpminimax.seeding import make_generator
from dpminimax.solvers import (
    SOLVERS,
    STOPPINGS,
    Target,
    check_solver,
    markov_failure,
    solve_runs,
)

SHARED = (*PROBLEM_SHARED, "sigma", "accountant", "stopping", "project")
#: The base-solver parameters of Algs. 1-5 (:mod:`dpminimax.solvers`). How an iterative base
#: solver stops: on its certificate (the accuracy condition holds with
#: probability 1), or after the iterations its a-priori rate needs for the paper's
#: in-expectation accuracy, Markov's inequality giving the condition with probability
#: 1 - delta / 4 (delta / 8 on a game), inside the delta / 2 kept for the solver (our split
#: E9: the runs count the calls whose point misses the condition).
SOLVER_PARAMETERS: dict[str, Any] = {"solver": "exact", "stopping": "certificate"}
SOLVER_CHECKS: dict[str, Check] = {"solver": one_of(*SOLVERS), "stopping": one_of(*STOPPINGS)}
#: The projection ablation of the output-perturbation methods (:meth:`ReleaseTally.release`):
#: off, the paper's algorithms as written.
PROJECT_PARAMETERS: dict[str, Any] = {"project": False}
PROJECT_CHECKS: dict[str, Check] = {"project": FLAG}


class OutputPerturbation(ProblemMethod):
    """BYOA Alg. 1 (a minimization problem) or Alg. 3 (a min-max problem) with the base solver
    ``solver`` (module docstring)."""

    name: ClassVar[str] = "output_perturbation"
    label: ClassVar[str] = "Output perturbation (BYOA Alg. 1 / 3)"
    paper: ClassVar[str] = "byoa"
    source: ClassVar[str] = "paper 003 (BYOA), Algs. 1 and 3"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {**PROBLEM_PARAMETERS, "sigma": "paper",
                                            "accountant": "pld", **SOLVER_PARAMETERS,
                                            **PROJECT_PARAMETERS}
    checks: ClassVar[dict[str, Check]] = {**PROBLEM_CHECKS,
                                          "sigma": one_of("paper", "calibrated"),
                                          "accountant": ACCOUNTANT, **SOLVER_CHECKS,
                                          **PROJECT_CHECKS}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED
    utility_bounds = staticmethod(output_perturbation_bounds)

    def ridge(self, problem: Problem, n: int, run: RunSpec) -> float:
        """The ridge added to the objective (none: Algs. 1 and 3 as printed)."""
        return 0.0

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """One Gaussian release per block of the (certified) empirical solution, with the
        paper's sensitivities (of the objective plus :meth:`ridge`, recorded as ``ridge``
        where there is one) and (``sigma``) the paper's or the calibrated multiplier."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        check_solver(params["solver"], problem, params["stopping"])
        ridge = self.ridge(problem, n, run)
        sensitivities = output_sensitivities(problem, n, ridge)
        return output_plan(self, run, params, len(sensitivities),
                           lambda multiplier: output_releases(sensitivities, multiplier),
                           {"ridge": ridge} if ridge else {})

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> OutputProgram:
        ridges = {plan.values.get("ridge", 0.0) for plan in plans}
        if len(ridges) != 1:  # the ridge depends on (n, epsilon, delta): one per job and n
            raise ValueError(f"runs of one program must share their ridge, got {sorted(ridges)}")
        problem = self.problem(shared)
        return OutputProgram(problem, self.samples(problem, runs, resolved, device),
                             [run.seed for run in runs], BaseSolvers.of(resolved, runs),
                             plans, device=device, ridge=ridges.pop(),
                             project=bool(shared["project"]))


class RidgeOutputPerturbation(OutputPerturbation):
    """Single-phase output perturbation, the "direct method" (a baseline for a convex problem,
    B9 for a convex-concave one): Alg. 1 (Alg. 3) on the objective plus the ridge of
    :func:`ridged_constants`, the ridge chosen by :func:`balanced_ridge` (a formula of the
    a-priori constants, never tuned on data). Its error is measured on the problem itself; the
    paper prints no bound for it."""

    name: ClassVar[str] = "ridge_output_perturbation"
    label: ClassVar[str] = "Single-phase output perturbation with a ridge (spec B1 / B9)"
    parameters: ClassVar[dict[str, Any]] = {**OutputPerturbation.parameters,
                                            "problem": "p1_convex_least_squares"}
    utility_bounds = staticmethod(ProblemMethod.utility_bounds)

    def ridge(self, problem: Problem, n: int, run: RunSpec) -> float:
        return balanced_ridge(problem, n, run.epsilon, run.delta)


def balanced_ridge(problem: Problem, n: int, epsilon: float, delta: float) -> float:
    """The ridge lambda minimizing lambda sum_b R_b^2 / 2 (the most the ridge can move the
    problem's excess risk or strong gap) plus Thm. 3.4's (4.4's) population bound on the ridged
    objective ("balancing lambda D^2 / 2 against the Alg. 1 bound"), over 400
    log-spaced values of lambda D / L in [1e-8, 1e4]."""
    radii = [block.radius for block in problem.blocks]
    bias = sum(r * r for r in radii) / 2.0
    metric = "population_strong_gap" if problem.maximized else "excess_population_risk"
    scale = problem.constants.lipschitz / problem.constants.diameter

    def total(ridge: float) -> float:
        return ridge * bias + output_perturbation_bounds(
            problem, n, epsilon, delta, ridged_constants(problem, ridge))[metric]

    return min((float(v) * scale for v in np.geomspace(1e-8, 1e4, 400)), key=total)


def output_plan(method: ProblemMethod, run: RunSpec, params: dict[str, Any], blocks: int,
                releases: Callable[[float], Part], values: dict[str, Any]) -> RunPlan:
    """The plan of an output-perturbation method whose releases (given the noise multiplier)
    compose like ``blocks`` Gaussian releases: the paper's or the calibrated multiplier, the
    record at delta / 2 with the other half kept for the solver's failure, replace-one."""
    mechanism_delta = run.delta / 2.0

    def private() -> float:
        if params["sigma"] == "paper":
            return paper_multiplier(blocks, run.epsilon, run.delta)
        return calibrated_multiplier(blocks, run.epsilon, mechanism_delta, params["accountant"])

    multiplier = method.calibrate(run, private, 0.0)
    tree = releases(multiplier)
    plan = RunPlan.account(tree, {"noise_multiplier": multiplier, **values}, mechanism_delta,
                           params["accountant"])
    covered = not method.private or bool(plan.record["epsilon"] <= run.epsilon * (1 + 1e-9))
    return RunPlan(tree, plan.values, {
        **plan.record, "delta": run.delta, "delta_mechanism": mechanism_delta,
        "delta_solver_failure": run.delta - mechanism_delta,
        "neighboring_relation": "replace_one", "guarantee_covered": covered,
        **({} if covered else {"guarantee_not_covered": [
            f"the paper's sigma gives epsilon {plan.record['epsilon']:.4g} > target "
            f"{run.epsilon:g} (its Gaussian bound needs epsilon < 1)"]}),
    })


def output_sensitivities(problem: Problem, n: int, ridge: float = 0.0) -> dict[str, float]:
    """The replace-one l2 sensitivity of each block's output: Alg. 1's 4L / (mu n) or Alg. 3's
    (4L / n) sqrt(1 / (mu_b mu)), with the constants of the objective plus ``ridge``
    (:func:`ridged_constants`)."""
    constants = ridged_constants(problem, ridge)
    lipschitz, moduli = constants.lipschitz, constants.strong_convexity
    if not all(moduli[block.name] > 0 for block in problem.blocks):
        raise ValueError(f"output perturbation needs a strongly convex(-concave) problem; "
                         f"the moduli are {dict(moduli)}")
    if not problem.maximized:
        (block,) = problem.blocks
        return {block.name: 4.0 * lipschitz / (moduli[block.name] * n)}
    smallest = min(moduli[block.name] for block in problem.blocks)
    return {block.name: 4.0 * lipschitz / n * math.sqrt(1.0 / (moduli[block.name] * smallest))
            for block in problem.blocks}


def output_target(problem: Problem, n: int, ridge: float = 0.0) -> Target:
    """The accuracy the base solver must certify: Alg. 1 line 1, ||A(S) - x*|| <= L / (mu n);
    Alg. 3's (3), sqrt(mu_x ||dx||^2 + mu_y ||dy||^2) <= L / (sqrt(mu) n) (constants as in
    :func:`output_sensitivities`)."""
    constants = ridged_constants(problem, ridge)
    lipschitz, moduli = constants.lipschitz, constants.strong_convexity
    if not problem.maximized:
        (block,) = problem.blocks
        return Target(lipschitz / (moduli[block.name] * n))
    weights = {block.name: moduli[block.name] for block in problem.blocks}
    return Target(lipschitz / (math.sqrt(min(weights.values())) * n), weights)


def ridged_constants(problem: Problem, ridge: float) -> Constants:
    """The a-priori constants of the objective plus ridge / 2 ||b||^2 on every minimized block
    and minus it on every maximized one (our baselines): L + ridge sqrt(sum_b R_b^2) (the
    ridge's gradient on the balls), l + ridge, mu_b + ridge; the problem's own with ridge 0."""
    constants = problem.constants
    if ridge == 0:
        return constants
    radii = [block.radius for block in problem.blocks]
    if not all(math.isfinite(radius) for radius in radii):
        raise ValueError("a ridge needs bounded blocks (its gradient is unbounded on R^d); "
                         f"the radii are {radii}")
    return Constants(
        lipschitz=constants.lipschitz + ridge * math.sqrt(sum(r * r for r in radii)),
        smoothness=constants.smoothness + ridge,
        strong_convexity={name: mu + ridge for name, mu in constants.strong_convexity.items()},
        diameter=constants.diameter)


@dataclass
class BaseSolvers:
    """Every run's base solver, its stopping rule and privacy delta (for Markov stopping), and
    what the runs' solver calls have cost so far: evaluations (None: the exact solver's, not
    counted) and, under Markov stopping, the calls whose point missed its target and the
    audit's largest values over the run's calls (:meth:`counters`)."""

    names: list[str]
    stopping: str
    delta: float
    evaluations: list[int | None] = field(default_factory=list)
    missed: list[int] = field(default_factory=list)
    calls: int = 0
    #: Under Markov stopping, the miss probability the proofs allow each call.
    allowed: float | None = None
    ratios: list[dict[str, float]] = field(default_factory=list)
    level_misses: list[dict[str, int]] = field(default_factory=list)

    @classmethod
    def of(cls, resolved: Sequence[dict[str, Any]], runs: Sequence[RunSpec]) -> BaseSolvers:
        return cls([str(p["solver"]) for p in resolved], str(resolved[0]["stopping"]),
                   min(run.delta for run in runs), [None] * len(runs), [0] * len(runs),
                   ratios=[{} for _ in runs], level_misses=[{} for _ in runs])

    def solve(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
              proxes: Sequence[Prox | None], targets: Sequence[Target | float],
              streams: Sequence[torch.Generator]) -> list[dict[str, torch.Tensor]]:
        """Every run's point (:func:`~dpminimax.solvers.solve_runs`), its cost recorded."""
        markov = self.stopping == "markov"
        if markov:
            self.allowed = markov_failure(problem, self.delta)
        solved = solve_runs(self.names, problem, samples, proxes, targets, streams,
                            stopping=self.stopping, delta=self.delta if markov else None)
        self.calls += 1
        for r, solution in enumerate(solved):
            if solution.gradient_evaluations is not None:
                self.evaluations[r] = (self.evaluations[r] or 0) + solution.gradient_evaluations
            if markov:
                self.missed[r] += not solution.meets_target
                measured = {"accuracy_ratio": solution.ratio, **{
                    f"accuracy_ratio_{level}": ratio
                    for level, ratio in solution.probes.items()},
                    "markov_iterations": solution.planned,
                    "iterations_to_accuracy": solution.met if solution.met >= 0 else math.inf}
                self.ratios[r] = {key: max(value, self.ratios[r].get(key, value))
                                  for key, value in measured.items()}
                self.level_misses[r] = {
                    f"accuracy_misses_{level}": self.level_misses[r].get(
                        f"accuracy_misses_{level}", 0) + int(ratio > 1.0)
                    for level, ratio in solution.probes.items()}
        return [solution.point for solution in solved]

    def counters(self, n: int) -> list[dict[str, float]]:
        """Every run's metric columns: :func:`solver_counters` and, under Markov stopping,
        ``accuracy_violations`` of its ``solver_calls``, the ``allowed_miss_rate`` per call
        and, the largest over its calls, ``accuracy_ratio`` (``accuracy_ratio_<level>``: at
        the iterations of the audit level, :data:`~dpminimax.solvers.AUDIT_LEVELS`), the
        ``markov_iterations`` planned and the ``iterations_to_accuracy`` after which the
        point first met its condition (inf: never), and the calls whose point at an audit
        level's iterations missed the condition (``accuracy_misses_<level>``; in expectation
        at most the calls x the level, Markov's bound)."""
        audit = [{"accuracy_violations": missed, "solver_calls": self.calls,
                  "allowed_miss_rate": self.allowed, **ratios, **misses}
                 if self.stopping == "markov" else {}
                 for missed, ratios, misses in zip(self.missed, self.ratios, self.level_misses,
                                                   strict=True)]
        return [{**solver_counters(count, n), **extra}
                for count, extra in zip(self.evaluations, audit, strict=True)]


def solver_counters(evaluations: int | None, n: int) -> dict[str, float]:
    """A run's metric columns for its base solver's per-sample gradient evaluations (none
    for the exact solver, which counts none)."""
    if evaluations is None:
        return {}
    return {"gradient_evaluations": evaluations,
            "gradient_evaluations_per_sample": evaluations / n}


def paper_multiplier(blocks: int, target: float, delta: float) -> float:
    """sigma / Delta as printed: Alg. 1 sqrt(2 log(2.5 / delta)) / epsilon; Alg. 3 (two
    blocks, each at (epsilon / 2, delta / 4)) 2 sqrt(2 log(5 / delta)) / epsilon."""
    if blocks == 1:
        return math.sqrt(2.0 * math.log(2.5 / delta)) / target
    return 2.0 * math.sqrt(2.0 * math.log(5.0 / delta)) / target


def output_releases(sensitivities: dict[str, float], multiplier: float,
                    clip: float | None = None) -> Batch:
    """One full-data Gaussian release per block (``output_<block>``); ``clip``: the bound of
    the clipped gradients the sensitivities rest on, if any (:attr:`Release.clip`)."""
    return Batch(tuple(Release(f"output_{name}", "gaussian", multiplier, sensitivity, clip)
                       for name, sensitivity in sensitivities.items()))


@functools.lru_cache(maxsize=256)
def calibrated_multiplier(blocks: int, target: float, delta: float, accountant: str) -> float:
    """The smallest multiplier with which ``blocks`` Gaussian releases meet (target, delta)."""
    def releases(multiplier: float) -> Batch:
        return output_releases({str(b): 1.0 for b in range(blocks)}, multiplier)

    calibrated = calibrate_release_parameter(releases, target, delta, accountant)
    assert epsilon(plan_event(releases(calibrated)), delta, accountant) <= target * (1 + 1e-9)
    return calibrated


class ReleaseTally:
    """Every run's released blocks so far and how many of them left their ball (before any
    projection): the ``release_outside_ball`` share of the projection ablation."""

    def __init__(self, runs: int) -> None:
        self.outside = [0] * runs
        self.released = [0] * runs

    def release(self, problem: Problem, block: str, released: torch.Tensor,
                project: bool) -> torch.Tensor:
        """Count the runs' releases of ``block`` (R, dim) and, with ``project``, return them
        projected onto the block's ball (post-processing of the noisy release: the privacy
        record is unchanged); else as released."""
        ball = problem.block(block)
        outside = (torch.linalg.vector_norm(released, dim=-1) > ball.radius).tolist()
        self.outside = [count + bool(o) for count, o in zip(self.outside, outside, strict=True)]
        self.released = [count + 1 for count in self.released]
        return ball.project(released) if project else released

    def counters(self) -> list[dict[str, float]]:
        return [{"release_outside_ball": outside / released}
                for outside, released in zip(self.outside, self.released, strict=True)]


class OutputProgram:
    """One step: every run's empirical solution by its base solver (certified to
    :func:`output_target`; its randomness from stream ``"solver"``), each block released with
    its noise (stream ``"noise_<block>"``; with ``project`` then projected onto its ball,
    post-processing). ``model`` is the problem; ``counters`` are the runs'
    :meth:`BaseSolvers.counters` and :class:`ReleaseTally` share. With ``ridge`` the empirical
    objective gets the ridge of :func:`ridged_constants` (a proximal term centred at 0)."""

    def __init__(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
                 seeds: Sequence[int], solvers: BaseSolvers, plans: Sequence[RunPlan], *,
                 device: torch.device, ridge: float = 0.0, project: bool = False) -> None:
        self.model, self.samples, self.steps = problem, samples, 1
        self.project, self.tally = project, ReleaseTally(len(seeds))
        self.solvers = solvers
        self.n = len(next(iter(samples[0].values())))
        self.target = output_target(problem, self.n, ridge)
        self.prox = None if ridge == 0 else (
            {block.name: torch.zeros(block.dim, dtype=problem.dtype, device=device)
             for block in problem.blocks},
            {block.name: ridge for block in problem.blocks})
        self.solver_streams = [make_generator(seed, "solver") for seed in seeds]
        self.counters: list[dict[str, float]] = [{} for _ in seeds]
        self.releases = {block.name: BatchedRelease(
            [plan.release(f"output_{block.name}") for plan in plans], device)
            for block in problem.blocks}
        self.noise = {block.name: [make_generator(seed, f"noise_{block.name}", device)
                                   for seed in seeds] for block in problem.blocks}
        self.state: dict[str, torch.Tensor] = {}

    def step(self) -> None:
        runs = len(self.samples)
        solutions = self.solvers.solve(self.model, self.samples, [self.prox] * runs,
                                       [self.target] * runs, self.solver_streams)
        self.state = {name: self.tally.release(self.model, name, release.perturb(
            torch.stack([s[name] for s in solutions]), self.noise[name]), self.project)
                      for name, release in self.releases.items()}
        self.counters = [{**solver, **tally} for solver, tally in zip(
            self.solvers.counters(self.n), self.tally.counters(), strict=True)]


ExactSolution = nonprivate_twin(
    OutputPerturbation, "ExactSolution", name="exact_solution",
    label="Non-private ERM / saddle point (exact)",
    doc="The exact empirical minimizer or saddle point of each run's sample ("
        "B5): output perturbation with the noise off.",
    fixed={"sigma": "paper", "accountant": "pld"})
