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
a-priori bound on ||x*|| (non-private: (L / D) / sqrt(n), spec 003 §2.10). Every phase spends the
full budget and the phases compose in parallel over the disjoint chunks
(:class:`~dpminimax.privacy.release.Parallel`); the noise multiplier and the delta split are
Alg. 1's (:func:`~dpminimax.algorithms.output_perturbation.output_plan`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.output_perturbation import (
    SOLVER_CHECKS,
    SOLVER_PARAMETERS,
    output_plan,
    output_releases,
    solver_counters,
)
from dpminimax.algorithms.params import ACCOUNTANT, Check, one_of
from dpminimax.algorithms.problem_method import PROBLEM_CHECKS, PROBLEM_PARAMETERS, ProblemMethod
from dpminimax.algorithms.utility_bounds import phased_output_perturbation_bounds
from dpminimax.data import PreparedDataset
from dpminimax.privacy.release import BatchedRelease, Parallel
from dpminimax.problems import Problem
from dpminimax.problems.base import Prox
from dpminimax.seeding import make_generator
from dpminimax.solvers import Target, check_solver, solve

SHARED = ("problem", "instance", "n", "sigma", "accountant")


class PhasedOutputPerturbation(ProblemMethod):
    """BYOA Alg. 2 on a convex minimization problem (module docstring)."""

    name: ClassVar[str] = "phased_output_perturbation"
    label: ClassVar[str] = "Phased output perturbation (BYOA Alg. 2)"
    paper: ClassVar[str] = "byoa"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {**PROBLEM_PARAMETERS,
                                            "problem": "p1_convex_least_squares",
                                            "sigma": "paper", "accountant": "pld",
                                            **SOLVER_PARAMETERS}
    checks: ClassVar[dict[str, Check]] = {**PROBLEM_CHECKS,
                                          "sigma": one_of("paper", "calibrated"),
                                          "accountant": ACCOUNTANT, **SOLVER_CHECKS}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED
    utility_bounds = staticmethod(phased_output_perturbation_bounds)

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """K phases, each one Gaussian release of its solution, composed in parallel."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        if problem.maximized:
            raise ValueError(f"method {self.name!r} is Alg. 2 for minimization; problem "
                             f"{params['problem']!r} is a min-max problem")
        check_solver(params["solver"], problem)
        (block,) = problem.blocks
        constants = problem.constants
        lipschitz, bound = constants.lipschitz, constants.diameter
        phases, chunk = phase_schedule(n)
        mu = self.calibrate(run, lambda: lipschitz / bound * max(
            1.0 / math.sqrt(n), 14.0 * math.log2(n) * math.sqrt(
                block.dim * math.log(2.5 / run.delta)) / (n * run.epsilon)),
            lipschitz / bound / math.sqrt(n))
        sensitivities = phase_sensitivities(lipschitz, chunk, mu, phases, math.inf)
        return output_plan(
            self, run, params, 1,
            lambda multiplier: phased_releases(block.name, sensitivities, multiplier),
            {"phases": phases, "chunk": chunk, "mu": mu})

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> PhasedProgram:
        problem = self.problem(shared)
        (block,) = problem.blocks
        lipschitz, chunk = problem.constants.lipschitz, int(resolved[0]["chunk"])
        return PhasedProgram(problem, self.samples(problem, runs, resolved, device),
                             [run.seed for run in runs], resolved, plans, ((block.name, None),),
                             lambda moduli, mu: lipschitz / (moduli[block.name] * chunk),
                             device=device)


def phase_schedule(n: int) -> tuple[int, int]:
    """(K, nbar): K = floor(log2 n) phases (at least one) of nbar = floor(n / K) examples."""
    phases = max(1, int(math.log2(n)))
    return phases, n // phases


def phase_sensitivities(lipschitz: float, chunk: int, mu: float, phases: int,
                        concavity: float) -> list[float]:
    """Phase k's replace-one sensitivity 4L / (nbar sqrt(mu_k min(mu_k, concavity))),
    mu_k = mu 2^k, k = 1..K: Alg. 2 with ``concavity`` inf (4L / (mu_k nbar)), Algs. 4 and 5
    with mu (4L / (nbar sqrt(mu_k mu))), Cor. 4.9 with mu_y."""
    return [4.0 * lipschitz / (chunk * math.sqrt(mu * 2 ** k * min(mu * 2 ** k, concavity)))
            for k in range(1, phases + 1)]


def phased_releases(block: str, sensitivities: Sequence[float], multiplier: float) -> Parallel:
    """One algorithm's phases, each releasing ``block`` once (``output_<block>_<k>``), composed
    in parallel over the disjoint chunks (Lemma A.1)."""
    return Parallel(tuple(output_releases({f"{block}_{k}": sensitivity}, multiplier)
                          for k, sensitivity in enumerate(sensitivities, start=1)))


#: One algorithm of a phased program: (the block it releases, the block it regularizes at mu
#: around 0, or None).
Side = tuple[str, str | None]
#: A phase's accuracy (what its base solver certifies) from its proximal moduli and mu.
PhaseTarget = Callable[[dict[str, float], float], "float | Target"]


class PhasedProgram:
    """The phased output-perturbation program of BYOA Algs. 2, 4, 5 and Cor. 4.9: one step per
    phase of every algorithm in ``sides`` (interleaved: step t is phase t // len(sides) + 1 of
    algorithm t % len(sides)). Every run solves that chunk's regularized problem with its base
    solver (stream ``"solver"``; warm-started at the prox centers), certified to ``target``:
    the released block at mu_k = mu 2^k around its last release, the side's other block, if
    any, at mu around 0; and releases the block (stream ``"noise_<block>"``). ``state`` holds
    the released blocks after the steps so far, ``counters`` the runs' solver counts so far
    (:func:`~dpminimax.algorithms.output_perturbation.solver_counters`)."""

    def __init__(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
                 seeds: Sequence[int], params: Sequence[dict[str, Any]],
                 plans: Sequence[RunPlan], sides: tuple[Side, ...], target: PhaseTarget, *,
                 device: torch.device) -> None:
        self.model, self.samples, self.sides, self.target = problem, samples, sides, target
        phases, self.chunk = int(params[0]["phases"]), int(params[0]["chunk"])
        self.steps = phases * len(sides)
        self.mu = [float(p["mu"]) for p in params]
        self.solvers = [str(p["solver"]) for p in params]
        self.solver_streams = [make_generator(seed, "solver") for seed in seeds]
        self.n = len(next(iter(samples[0].values())))
        self.evaluations: list[int | None] = [None for _ in seeds]
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
        rows = slice((k - 1) * self.chunk, k * self.chunk)
        points = []
        for r, sample in enumerate(self.samples):
            centers, moduli = self.prox(r, k, block, fixed)
            point, evaluations = solve(
                self.solvers[r], self.model, {key: value[rows] for key, value in sample.items()},
                (centers, moduli), self.target(moduli, self.mu[r]), self.solver_streams[r])
            points.append(point[block])
            if evaluations is not None:
                self.evaluations[r] = (self.evaluations[r] or 0) + evaluations
        self.counters = [solver_counters(count, self.n) for count in self.evaluations]
        self.state = {**self.state,
                      block: self.releases[block, k].perturb(torch.stack(points),
                                                             self.noise[block])}
        self.done += 1

    def prox(self, run: int, k: int, block: str, fixed: str | None) -> Prox:
        """Run ``run``'s proximal term in phase k: ``block`` at mu_k around its last release,
        ``fixed`` (if any) at mu around 0."""
        centers = {block: self.state[block][run]}
        moduli = {block: self.mu[run] * 2 ** k}
        if fixed is not None:
            centers[fixed] = torch.zeros(self.model.block(fixed).dim, dtype=self.model.dtype,
                                         device=centers[block].device)
            moduli[fixed] = self.mu[run]
        return centers, moduli


PhasedExact = nonprivate_twin(
    PhasedOutputPerturbation, "PhasedExact", name="phased_exact",
    label="Phased regularized ERM (non-private, BYOA Alg. 2 without noise)",
    doc="Alg. 2's phases with the noise off and mu = (L / D) / sqrt(n): the non-private "
        "reference of spec 003 §2.10 (solved exactly by default; any base solver certifies "
        "the same accuracy).",
    fixed={"sigma": "paper", "accountant": "pld"})
