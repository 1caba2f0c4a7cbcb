"""Output perturbation with an exact base solver: BYOA (paper 003) Algorithm 1 (strongly convex
minimization) and Algorithm 3 (SC-SC min-max), and the exact non-private solution (the
spec's B0 / B5 references).

Each run solves its empirical problem (:meth:`~dpminimax.problems.Problem.empirical_solution`,
exact to machine precision: the accuracy conditions of Alg. 1 line 1 and Alg. 3's (3) hold with
probability 1) and releases every block once with Gaussian noise, under the paper's replace-one
relation with the paper's high-probability sensitivities:

* Alg. 1: Delta = 4 L / (mu n) (stability 2L / (mu n) plus twice the solver radius L / (mu n));
  the paper's sigma = 4 L sqrt(2 log(2.5 / delta)) / (mu n epsilon), i.e. the multiplier
  sqrt(2 log(2.5 / delta)) / epsilon;
* Alg. 3: Delta_b = (4 L / n) sqrt(1 / (mu_b mu)) for b in (x, y), mu = min(mu_x, mu_y); the
  paper's sigma_b = (8 L / (n epsilon)) sqrt(2 log(5 / delta) / (mu_b mu)), i.e. the multiplier
  2 sqrt(2 log(5 / delta)) / epsilon (each block at (epsilon / 2, delta / 4)).

In both, delta / 2 is the paper's allowance for the solver's failure probability and delta / 2
is the mechanism's (Def. 2 applied at delta / 2). ``sigma="paper"`` uses the paper's
multiplier; its record is the accountant's epsilon of the releases at delta / 2, and
``guarantee_covered`` says whether that is within the target (the classical Gaussian bound the
paper uses holds only for epsilon < 1). ``sigma="calibrated"`` uses the smallest multiplier
with which the releases meet (epsilon, delta / 2) by our accountant. A Gaussian release's
privacy depends only on sigma / Delta, so accounting it with the replace-one sensitivity is
exact.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.params import ACCOUNTANT, Check, one_of
from dpminimax.algorithms.problem_method import PROBLEM_CHECKS, PROBLEM_PARAMETERS, ProblemMethod
from dpminimax.data import PreparedDataset
from dpminimax.privacy import calibrate_event_parameter, epsilon
from dpminimax.privacy.release import Batch, BatchedRelease, Part, Release, plan_event
from dpminimax.problems import Problem
from dpminimax.seeding import make_generator

SHARED = ("problem", "instance", "n", "sigma", "accountant")


class OutputPerturbation(ProblemMethod):
    """BYOA Alg. 1 (a minimization problem) or Alg. 3 (a min-max problem) with the exact
    solver (module docstring)."""

    name: ClassVar[str] = "output_perturbation"
    label: ClassVar[str] = "Output perturbation (BYOA Alg. 1 / 3)"
    paper: ClassVar[str] = "byoa"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {**PROBLEM_PARAMETERS, "sigma": "paper",
                                            "accountant": "pld"}
    checks: ClassVar[dict[str, Check]] = {**PROBLEM_CHECKS,
                                          "sigma": one_of("paper", "calibrated"),
                                          "accountant": ACCOUNTANT}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """One Gaussian release per block of the exact empirical solution, with the paper's
        sensitivities and (``sigma``) the paper's or the calibrated multiplier."""
        params = self.resolve(run.params)
        sensitivities = output_sensitivities(self.problem(params), n)
        return output_plan(self, run, params, len(sensitivities),
                           lambda multiplier: output_releases(sensitivities, multiplier), {})

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> OutputProgram:
        problem = self.problem(shared)
        return OutputProgram(problem, self.samples(problem, runs, resolved, device),
                             [run.seed for run in runs], plans, device=device)


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


def output_sensitivities(problem: Problem, n: int) -> dict[str, float]:
    """The replace-one l2 sensitivity of each block's output: Alg. 1's 4L / (mu n) or Alg. 3's
    (4L / n) sqrt(1 / (mu_b mu))."""
    constants = problem.constants
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


def paper_multiplier(blocks: int, target: float, delta: float) -> float:
    """sigma / Delta as printed: Alg. 1 sqrt(2 log(2.5 / delta)) / epsilon; Alg. 3 (two
    blocks, each at (epsilon / 2, delta / 4)) 2 sqrt(2 log(5 / delta)) / epsilon."""
    if blocks == 1:
        return math.sqrt(2.0 * math.log(2.5 / delta)) / target
    return 2.0 * math.sqrt(2.0 * math.log(5.0 / delta)) / target


def output_releases(sensitivities: dict[str, float], multiplier: float) -> Batch:
    """One full-data Gaussian release per block (``output_<block>``)."""
    return Batch(tuple(Release(f"output_{name}", "gaussian", multiplier, sensitivity)
                       for name, sensitivity in sensitivities.items()))


@functools.lru_cache(maxsize=256)
def calibrated_multiplier(blocks: int, target: float, delta: float, accountant: str) -> float:
    """The smallest multiplier with which ``blocks`` Gaussian releases meet (target, delta)."""
    def event(multiplier: float):
        return plan_event(output_releases({str(b): 1.0 for b in range(blocks)}, multiplier))

    calibrated = calibrate_event_parameter(event, target, delta, accountant)
    assert epsilon(event(calibrated), delta, accountant) <= target * (1 + 1e-9)
    return calibrated


class OutputProgram:
    """One step: every run's exact empirical solution, each block released with its noise
    (stream ``"noise_<block>"``). ``model`` is the problem."""

    def __init__(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
                 seeds: Sequence[int], plans: Sequence[RunPlan], *,
                 device: torch.device) -> None:
        self.model, self.samples, self.steps = problem, samples, 1
        self.releases = {block.name: BatchedRelease(
            [plan.release(f"output_{block.name}") for plan in plans], device)
            for block in problem.blocks}
        self.noise = {block.name: [make_generator(seed, f"noise_{block.name}", device)
                                   for seed in seeds] for block in problem.blocks}
        self.state: dict[str, torch.Tensor] = {}

    def step(self) -> None:
        solutions = [self.model.empirical_solution(sample) for sample in self.samples]
        self.state = {name: release.perturb(torch.stack([s[name] for s in solutions]),
                                            self.noise[name])
                      for name, release in self.releases.items()}


ExactSolution = nonprivate_twin(
    OutputPerturbation, "ExactSolution", name="exact_solution",
    label="Non-private ERM / saddle point (exact)",
    doc="The exact empirical minimizer or saddle point of each run's sample (spec 003 B0 / "
        "B5): output perturbation with the noise off.",
    fixed={"sigma": "paper", "accountant": "pld"})
