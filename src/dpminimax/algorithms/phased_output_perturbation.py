"""BYOA (paper 003) Algorithm 2: phased output perturbation for convex minimization, with the
exact base solver.

K = floor(log2 n) phases on consecutive disjoint chunks of nbar = floor(n / K) examples (the
n - K nbar left over are not used); phase k solves, exactly,
min_X F_k(x) + mu_k ||x - x~_{k-1}||^2 / 2 on its chunk with mu_k = mu 2^k, and releases the
solution with Gaussian noise of sensitivity 4L / (mu_k nbar) (Lemma 3.5 stability plus the
solver radius, as in Alg. 1); x~_0 = 0 and the output is x~_K. mu is Theorem 3.7's
(L / D) max(1 / sqrt(n), 14 log2(n) sqrt(d log(2.5 / delta)) / (n epsilon)) with D the problem's
a-priori bound on ||x*|| (non-private: (L / D) / sqrt(n), spec 003 §2.10). Every phase spends the
full budget and the phases compose in parallel over the disjoint chunks
(:class:`~dpminimax.privacy.release.Parallel`); the noise multiplier and the delta split are
Alg. 1's (:func:`~dpminimax.algorithms.output_perturbation.output_plan`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.output_perturbation import output_plan, output_releases
from dpminimax.algorithms.params import ACCOUNTANT, Check, one_of
from dpminimax.algorithms.problem_method import PROBLEM_CHECKS, PROBLEM_PARAMETERS, ProblemMethod
from dpminimax.data import PreparedDataset
from dpminimax.privacy.release import BatchedRelease, Parallel
from dpminimax.problems import Problem
from dpminimax.seeding import make_generator

SHARED = ("problem", "instance", "n", "sigma", "accountant")


class PhasedOutputPerturbation(ProblemMethod):
    """BYOA Alg. 2 on a convex minimization problem (module docstring)."""

    name: ClassVar[str] = "phased_output_perturbation"
    label: ClassVar[str] = "Phased output perturbation (BYOA Alg. 2)"
    paper: ClassVar[str] = "byoa"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {**PROBLEM_PARAMETERS,
                                            "problem": "p1_convex_least_squares",
                                            "sigma": "paper", "accountant": "pld"}
    checks: ClassVar[dict[str, Check]] = {**PROBLEM_CHECKS,
                                          "sigma": one_of("paper", "calibrated"),
                                          "accountant": ACCOUNTANT}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """K phases, each one Gaussian release of its solution, composed in parallel."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        if problem.maximized:
            raise ValueError(f"method {self.name!r} is Alg. 2 for minimization; problem "
                             f"{params['problem']!r} is a min-max problem")
        (block,) = problem.blocks
        constants = problem.constants
        lipschitz, bound = constants.lipschitz, constants.diameter
        phases = max(1, int(math.log2(n)))
        chunk = n // phases
        mu = self.calibrate(run, lambda: lipschitz / bound * max(
            1.0 / math.sqrt(n), 14.0 * math.log2(n) * math.sqrt(
                block.dim * math.log(2.5 / run.delta)) / (n * run.epsilon)),
            lipschitz / bound / math.sqrt(n))
        sensitivities = [4.0 * lipschitz / (mu * 2 ** k * chunk) for k in range(1, phases + 1)]
        return output_plan(
            self, run, params, 1,
            lambda multiplier: Parallel(tuple(
                output_releases({f"{block.name}_{k}": sensitivity}, multiplier)
                for k, sensitivity in enumerate(sensitivities, start=1))),
            {"phases": phases, "chunk": chunk, "mu": mu})

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> PhasedProgram:
        problem = self.problem(shared)
        return PhasedProgram(problem, self.samples(problem, runs, resolved, device),
                             [run.seed for run in runs], resolved, plans, device=device)


class PhasedProgram:
    """One step per phase: every run solves its chunk's regularized problem exactly and
    releases the solution (stream ``"noise_x"``); ``state`` is x~ after the phases so far."""

    def __init__(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
                 seeds: Sequence[int], params: Sequence[dict[str, Any]],
                 plans: Sequence[RunPlan], *, device: torch.device) -> None:
        (self.block,) = problem.blocks
        self.model, self.samples = problem, samples
        self.steps, self.chunk = int(params[0]["phases"]), int(params[0]["chunk"])
        self.mu = [float(p["mu"]) for p in params]
        self.releases = [BatchedRelease([plan.release(f"output_{self.block.name}_{k}")
                                         for plan in plans], device)
                         for k in range(1, self.steps + 1)]
        self.noise = [make_generator(seed, f"noise_{self.block.name}", device) for seed in seeds]
        self.state = {self.block.name: torch.zeros(len(seeds), self.block.dim,
                                                   dtype=problem.dtype, device=device)}
        self.phase = 0

    def step(self) -> None:
        k, name = self.phase + 1, self.block.name
        rows = slice((k - 1) * self.chunk, k * self.chunk)
        solutions = torch.stack([
            self.model.empirical_solution(
                {key: value[rows] for key, value in sample.items()},
                prox=({name: self.state[name][r]}, {name: self.mu[r] * 2 ** k}))[name]
            for r, sample in enumerate(self.samples)])
        self.state = {name: self.releases[k - 1].perturb(solutions, self.noise)}
        self.phase = k


PhasedExact = nonprivate_twin(
    PhasedOutputPerturbation, "PhasedExact", name="phased_exact",
    label="Phased regularized ERM (non-private, BYOA Alg. 2 without noise)",
    doc="Alg. 2's phases with the noise off and mu = (L / D) / sqrt(n): the non-private "
        "reference of spec 003 §2.10.",
    fixed={"sigma": "paper", "accountant": "pld"})
