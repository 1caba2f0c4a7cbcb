"""BYOA (paper 003) Algorithm 2: phased output perturbation for convex minimization.

K = floor(log2 n) phases on consecutive disjoint chunks of nbar = floor(n / K) examples (the
n - K nbar left over are not used); phase k solves min_X F_k(x) + mu_k ||x - x~_{k-1}||^2 / 2
on its chunk with mu_k = mu 2^k, with the base solver ``solver`` (:mod:`dpminimax.solvers`:
``exact``, or an iterative solver warm-started at Pi_X(x~_{k-1}) and stopped by its certificate
at ||x_k - x*_k|| <= L / (mu_k nbar), line 4's accuracy, with probability 1), and releases the
solution with Gaussian noise of sensitivity 4L / (mu_k nbar) (Lemma 3.5 stability plus the
solver radius, as in Alg. 1); x~_0 = 0 and the output is x~_K. An iterative solver's
per-sample gradient evaluations, summed over the phases, are the run's
``gradient_evaluations`` (``gradient_evaluations_per_sample``: over n). mu is Theorem 3.7's
(L / D) max(1 / sqrt(n), 14 log2(n) sqrt(d log(2.5 / delta)) / (n epsilon)) with D the problem's
a-priori bound on ||x*|| (non-private: (L / D) / sqrt(n), the paper's worked example). Every phase
spends the full budget and the phases compose in parallel over the disjoint chunks
(:class:`~dpminimax.privacy.release.Parallel`); the noise multiplier and the delta split are
Alg. 1's (:func:`~dpminimax.algorithms.minimax.output_perturbation.output_plan`).

Ablations (ours, E10): ``schedule: phased_erm`` is Feldman et al. 2020's phased-ERM
schedule (B4: phase k on n_k = floor(n 2^-k) examples with mu_k = mu 8^k; sensitivity and
accuracy with that phase's n_k); ``rounding: ceil`` takes K = ceil(log2 n) phases (the same K
as floor when n is a power of 2); ``project: true`` projects every release onto X (post-
processing; the literal algorithm does not).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.minimax.output_perturbation import (
    SOLVER_CHECKS,
    SOLVER_PARAMETERS,
    BaseSolvers,
    ReleaseTally,
    output_plan,
    output_releases,
)
from dpminimax.algorithms.minimax.utility_bounds import phased_output_perturbation_bounds
from dpminimax.algorithms.params import ACCOUNTANT, FLAG, Check, one_of
from dpminimax.algorithms.problem_method import (
    PROBLEM_CHECKS,
    PROBLEM_PARAMETERS,
    PROBLEM_SHARED,
    ProblemMethod,
)
from dpminimax.data import PreparedDataset
from dpminimax.privacy.release import BatchedRelease, Parallel
from dpminimax.problems import Problem
from dpminimax.problems.base import Prox
from dpminimax.seeding import make_generator
from dpminimax.solvers import Target, check_solver

SHARED = (*PROBLEM_SHARED, "sigma", "accountant", "stopping", "schedule", "rounding", "project")

#: mu_k = mu growth^k: Alg. 2's schedule (2^k), Feldman et al. 2020's phased ERM (2^{3k}).
SCHEDULE_GROWTH = {"paper": 2.0, "phased_erm": 8.0}


class PhasedOutputPerturbation(ProblemMethod):
    """BYOA Alg. 2 on a convex minimization problem (module docstring)."""

    name: ClassVar[str] = "phased_output_perturbation"
    label: ClassVar[str] = "Phased output perturbation (BYOA Alg. 2)"
    paper: ClassVar[str] = "byoa"
    source: ClassVar[str] = "paper 003 (BYOA), Alg. 2"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {**PROBLEM_PARAMETERS,
                                            "problem": "p1_convex_least_squares",
                                            "sigma": "paper", "accountant": "pld",
                                            "schedule": "paper", "rounding": "floor",
                                            "project": False, **SOLVER_PARAMETERS}
    checks: ClassVar[dict[str, Check]] = {**PROBLEM_CHECKS,
                                          "sigma": one_of("paper", "calibrated"),
                                          "accountant": ACCOUNTANT,
                                          "schedule": one_of(*SCHEDULE_GROWTH),
                                          "rounding": one_of("floor", "ceil"),
                                          "project": FLAG, **SOLVER_CHECKS}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED
    utility_bounds = staticmethod(phased_output_perturbation_bounds)

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """K phases, each one Gaussian release of its solution, composed in parallel."""
        params = self.resolve(run.params)
        problem = self.minimization_problem(params)
        check_solver(params["solver"], problem, params["stopping"])
        (block,) = problem.blocks
        constants = problem.constants
        lipschitz, bound = constants.lipschitz, constants.diameter
        schedule = phase_schedule(n, params["rounding"], params["schedule"])
        mu = self.calibrate(run, lambda: lipschitz / bound * max(
            1.0 / math.sqrt(n), 14.0 * math.log2(n) * math.sqrt(
                block.dim * math.log(2.5 / run.delta)) / (n * run.epsilon)),
            lipschitz / bound / math.sqrt(n))
        sensitivities = phase_sensitivities(lipschitz, schedule, mu, math.inf)
        return output_plan(
            self, run, params, 1,
            lambda multiplier: phased_releases(block.name, sensitivities, multiplier),
            {"phases": schedule.phases, "chunk": schedule.sizes[0], "mu": mu})

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> PhasedProgram:
        problem = self.problem(shared)
        (block,) = problem.blocks
        lipschitz = problem.constants.lipschitz
        return PhasedProgram(problem, self.samples(problem, runs, resolved, device),
                             [run.seed for run in runs], resolved, plans,
                             BaseSolvers.of(resolved, runs), ((block.name, None),),
                             lambda moduli, mu, size: lipschitz / (moduli[block.name] * size),
                             phase_schedule(int(shared["n"]), shared["rounding"],
                                            shared["schedule"]),
                             project=bool(shared["project"]), device=device)


@dataclass(frozen=True)
class PhaseSchedule:
    """The phases of a phased program: phase k (1-based) reads the ``sizes[k - 1]`` examples
    after the previous phases' (consecutive disjoint chunks) and is regularized at
    mu_k = mu ``growth``^k."""

    sizes: tuple[int, ...]
    growth: float

    @property
    def phases(self) -> int:
        return len(self.sizes)

    def rows(self, k: int) -> slice:
        """Phase k's chunk of the sample."""
        start = sum(self.sizes[:k - 1])
        return slice(start, start + self.sizes[k - 1])

    def modulus(self, mu: float, k: int) -> float:
        """mu_k."""
        return mu * self.growth ** k


def phase_schedule(n: int, rounding: str = "floor", schedule: str = "paper") -> PhaseSchedule:
    """Alg. 2's K = floor(log2 n) (``rounding`` ceil: ceil(log2 n)) phases, at least one, of
    nbar = floor(n / K) examples each (``schedule`` paper), or of n_k = max(1, floor(n 2^-k))
    (``phased_erm``, Feldman et al. 2020; their sum is at most n)."""
    phases = max(1, math.ceil(math.log2(n)) if rounding == "ceil" else int(math.log2(n)))
    if schedule == "phased_erm":
        sizes = tuple(max(1, n >> k) for k in range(1, phases + 1))
    else:
        sizes = (n // phases,) * phases
    return PhaseSchedule(sizes, SCHEDULE_GROWTH[schedule])


def phase_sensitivities(lipschitz: float, schedule: PhaseSchedule, mu: float,
                        concavity: float) -> list[float]:
    """Phase k's replace-one sensitivity 4L / (n_k sqrt(mu_k min(mu_k, concavity))), k = 1..K:
    Alg. 2 with ``concavity`` inf (4L / (mu_k nbar)), Algs. 4 and 5 with mu
    (4L / (nbar sqrt(mu_k mu))), Cor. 4.9 with mu_y."""
    return [4.0 * lipschitz / (size * math.sqrt(schedule.modulus(mu, k) * min(
        schedule.modulus(mu, k), concavity)))
            for k, size in enumerate(schedule.sizes, start=1)]


def phased_releases(block: str, sensitivities: Sequence[float], multiplier: float,
                    clip: float | None = None) -> Parallel:
    """One algorithm's phases, each releasing ``block`` once (``output_<block>_<k>``), composed
    in parallel over the disjoint chunks (Lemma A.1); ``clip`` as in :func:`output_releases`."""
    return Parallel(tuple(output_releases({f"{block}_{k}": sensitivity}, multiplier, clip)
                          for k, sensitivity in enumerate(sensitivities, start=1)))


#: One algorithm of a phased program: (the block it releases, the block it regularizes at mu
#: around 0, or None).
Side = tuple[str, str | None]
#: A phase's accuracy (what its base solver certifies) from its proximal moduli, mu and the
#: phase's sample size.
PhaseTarget = Callable[[dict[str, float], float, int], "float | Target"]


class PhasedProgram:
    """The phased output-perturbation program of BYOA Algs. 2, 4, 5 and Cor. 4.9: one step per
    phase of every algorithm in ``sides`` (interleaved: step t is phase t // len(sides) + 1 of
    algorithm t % len(sides)). Every run solves that chunk's regularized problem with its base
    solver (stream ``"solver"``; warm-started at the prox centers), certified to ``target``:
    the released block at mu_k = mu 2^k around its last release, the side's other block, if
    any, at mu around 0; and releases the block (stream ``"noise_<block>"``; with ``project``
    projected onto its ball, post-processing). ``state`` holds
    the released blocks after the steps so far, ``counters`` the runs' solver counts so far
    (:meth:`~dpminimax.algorithms.minimax.output_perturbation.BaseSolvers.counters`) and the
    share of their releases that left the ball
    (:class:`~dpminimax.algorithms.minimax.output_perturbation.ReleaseTally`)."""

    def __init__(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
                 seeds: Sequence[int], params: Sequence[dict[str, Any]],
                 plans: Sequence[RunPlan], solvers: BaseSolvers, sides: tuple[Side, ...],
                 target: PhaseTarget,
                 schedule: PhaseSchedule, *, project: bool = False,
                 device: torch.device) -> None:
        self.model, self.samples, self.sides, self.target = problem, samples, sides, target
        self.schedule, self.project = schedule, project
        self.tally = ReleaseTally(len(seeds))
        phases = schedule.phases
        self.steps = phases * len(sides)
        self.mu = [float(p["mu"]) for p in params]
        self.solvers = solvers
        self.solver_streams = [make_generator(seed, "solver") for seed in seeds]
        self.n = len(next(iter(samples[0].values())))
        self.counters: list[dict[str, float]] = [{} for _ in seeds]
        released = [block for block, _ in sides]
        self.releases = {(block, k): BatchedRelease(
            [plan.release(f"output_{block}_{k}") for plan in plans], device)
            for block in released for k in range(1, phases + 1)}
        self.noise = {block: [make_generator(seed, f"noise_{block}", device) for seed in seeds]
                      for block in released}
        self.state = {block: torch.zeros(len(seeds), problem.block(block).dim,
                                         dtype=problem.dtype, device=device)
                      for block in released}
        self.done = 0

    def step(self) -> None:
        k = self.done // len(self.sides) + 1
        block, fixed = self.sides[self.done % len(self.sides)]
        rows = self.schedule.rows(k)
        proxes = [self.prox(r, k, block, fixed) for r in range(len(self.samples))]
        solved = self.solvers.solve(
            self.model,
            [{key: value[rows] for key, value in sample.items()} for sample in self.samples],
            proxes, [self.target(moduli, mu, self.schedule.sizes[k - 1])
                     for (_, moduli), mu in zip(proxes, self.mu, strict=True)],
            self.solver_streams)
        points = [point[block] for point in solved]
        released = self.tally.release(self.model, block, self.releases[block, k].perturb(
            torch.stack(points), self.noise[block]), self.project)
        self.counters = [{**solver, **tally} for solver, tally in zip(
            self.solvers.counters(self.n), self.tally.counters(), strict=True)]
        self.state = {**self.state, block: released}
        self.done += 1

    def prox(self, run: int, k: int, block: str, fixed: str | None) -> Prox:
        """Run ``run``'s proximal term in phase k: ``block`` at mu_k around its last release,
        ``fixed`` (if any) at mu around 0."""
        centers = {block: self.state[block][run]}
        moduli = {block: self.schedule.modulus(self.mu[run], k)}
        if fixed is not None:
            centers[fixed] = torch.zeros(self.model.block(fixed).dim, dtype=self.model.dtype,
                                         device=centers[block].device)
            moduli[fixed] = self.mu[run]
        return centers, moduli


PhasedExact = nonprivate_twin(
    PhasedOutputPerturbation, "PhasedExact", name="phased_exact",
    label="Phased regularized ERM (non-private, BYOA Alg. 2 without noise)",
    doc="Alg. 2's phases with the noise off and mu = (L / D) / sqrt(n): the non-private "
        "reference of the paper's worked example (solved exactly by default; any base solver "
        "certifies the same accuracy).",
    fixed={"sigma": "paper", "accountant": "pld"})
