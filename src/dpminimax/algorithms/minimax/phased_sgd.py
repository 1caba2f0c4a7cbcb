"""Phased SGD (Feldman, Koren, Talwar 2020, "Private stochastic convex optimization: optimal
rates in linear time", Alg. 2; a BYOA baseline), and its non-private twin.

k = ceil(log2 n) phases on consecutive disjoint chunks of n_i = max(1, floor(n / 2^i))
examples (their sum is at most n). Phase i runs one pass of projected SGD with step
eta_i = eta / 4^i over its chunk from the previous phase's output (x_0 = 0), per-example
gradients clipped at the problem's Lipschitz constant L (on the feasible set this changes
nothing), and releases the average of its iterates with Gaussian noise. Sensitivity 2 L eta_i
(replace-one): the one-pass runs on neighbouring chunks differ in one step, by at most
2 L eta_i, and the later steps are non-expansive for eta_i <= 2 / l (Hardt et al. 2016), so
eta is capped at 8 / l (``step_capped`` in the plan's values; our choice: beyond
l ~ sqrt(n) L / D the paper's rate needs a larger step than its privacy proof allows). The
paper's sigma_i = 4 L eta_i sqrt(log(1 / delta)) / eps is replaced by the multiplier our
accountant calibrates for one Gaussian release at (epsilon, delta); the phases compose in
parallel (:class:`~dpminimax.privacy.release.Parallel`, as BYOA's Alg. 2). ``lr="theory"`` is
the paper's eta = (D / L) min(4 / sqrt(n), eps / sqrt(d log(1 / delta))). The runs'
``counters`` are their sum of n_i gradient evaluations (linear time).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.minimax.output_perturbation import calibrated_multiplier, solver_counters
from dpminimax.algorithms.minimax.phased_output_perturbation import (
    PhaseSchedule,
    phase_schedule,
    phased_releases,
)
from dpminimax.algorithms.params import ACCOUNTANT, POSITIVE, Check
from dpminimax.algorithms.problem_method import (
    PROBLEM_CHECKS,
    PROBLEM_PARAMETERS,
    PROBLEM_SHARED,
    ProblemMethod,
)
from dpminimax.data import PreparedDataset
from dpminimax.kernels.clip import clipped_sum
from dpminimax.privacy.release import BatchedRelease
from dpminimax.problems import Problem
from dpminimax.problems.base import stack_examples
from dpminimax.seeding import make_generator

THEORY = "theory"


class PhasedSgd(ProblemMethod):
    """Feldman et al. 2020 Alg. 2 on a convex minimization problem (module docstring)."""

    name: ClassVar[str] = "phased_sgd"
    label: ClassVar[str] = "Phased SGD (Feldman et al. 2020, Alg. 2)"
    paper: ClassVar[str] = "byoa"
    source: ClassVar[str] = "Feldman, Koren, Talwar 2020, Alg. 2 (BYOA baseline B3)"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {**PROBLEM_PARAMETERS,
                                            "problem": "p1_convex_least_squares",
                                            "lr": THEORY, "accountant": "rdp"}
    checks: ClassVar[dict[str, Check]] = {
        **PROBLEM_CHECKS, "accountant": ACCOUNTANT,
        "lr": Check(f"{THEORY!r} (the paper's eta) or a number > 0",
                    lambda v: v == THEORY or POSITIVE.accepts(v))}
    shared_parameters: ClassVar[tuple[str, ...]] = (*PROBLEM_SHARED, "accountant")

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """One Gaussian release per phase, sensitivity 2 L eta_i for SGD on gradients
        clipped at L (the releases' clip), composed in parallel."""
        params = self.resolve(run.params)
        problem = self.minimization_problem(params)
        (block,) = problem.blocks
        constants = problem.constants
        lr = (theory_step(problem, n, run.epsilon, run.delta) if params["lr"] == THEORY
              else float(params["lr"]))
        cap = 8.0 / constants.smoothness
        phases = sgd_phases(n).phases
        sensitivities = [2.0 * constants.lipschitz * min(lr, cap) / 4 ** i
                         for i in range(1, phases + 1)]
        multiplier = self.calibrate(run, lambda: calibrated_multiplier(
            1, run.epsilon, run.delta, params["accountant"]), 0.0)
        return RunPlan.account(
            phased_releases(block.name, sensitivities, multiplier, constants.lipschitz),
            {"noise_multiplier": multiplier, "lr": min(lr, cap), "step_capped": lr > cap,
             "phases": phases}, run.delta, params["accountant"],
            neighboring_relation="replace_one")

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> PhasedSgdProgram:
        problem = self.problem(shared)
        return PhasedSgdProgram(problem, self.samples(problem, runs, resolved, device),
                                [run.seed for run in runs], resolved, plans, device=device)


def theory_step(problem: Problem, n: int, epsilon: float, delta: float) -> float:
    """eta = (D / L) min(4 / sqrt(n), eps / sqrt(d log(1 / delta))) (4 D / (L sqrt(n)) at
    epsilon = inf)."""
    (block,) = problem.blocks
    constants = problem.constants
    return constants.diameter / constants.lipschitz * min(
        4.0 / math.sqrt(n), epsilon / math.sqrt(block.dim * math.log(1.0 / delta)))


def sgd_phases(n: int) -> PhaseSchedule:
    """The phased-ERM schedule's chunks: n_i = max(1, floor(n / 2^i)) for i = 1..ceil(log2 n)
    (at least one phase)."""
    return phase_schedule(n, "ceil", "phased_erm")


class PhasedSgdProgram:
    """One step per phase: every run's one-pass projected SGD over its chunk (batched over
    runs), its average released with the phase's noise (stream ``"noise_<block>"``).
    ``state`` holds the last release, ``counters`` the gradient evaluations so far,
    ``samples`` the runs' own samples."""

    def __init__(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
                 seeds: Sequence[int], params: Sequence[dict[str, Any]],
                 plans: Sequence[RunPlan], *, device: torch.device) -> None:
        (self.block,) = problem.blocks
        self.model, self.samples, self.n = problem, list(samples), int(params[0]["n"])
        self.examples = stack_examples(samples)
        self.schedule = sgd_phases(self.n)
        self.steps = self.schedule.phases
        self.lr = torch.tensor([float(p["lr"]) for p in params], dtype=problem.dtype,
                               device=device).view(-1, 1)
        self.releases = [BatchedRelease([plan.release(f"output_{self.block.name}_{k}")
                                         for plan in plans], device)
                         for k in range(1, self.steps + 1)]
        self.noise = [make_generator(seed, f"noise_{self.block.name}", device)
                      for seed in seeds]
        self.state = {self.block.name: torch.zeros(len(seeds), self.block.dim,
                                                   dtype=problem.dtype, device=device)}
        self.done = 0

    @property
    def counters(self) -> list[dict[str, float]]:
        used = sum(self.schedule.sizes[:self.done])
        return [solver_counters(used, self.n) for _ in self.noise]

    def step(self) -> None:
        phase = self.done + 1
        step = self.lr / 4 ** phase
        point = self.state[self.block.name]
        average = torch.zeros_like(point)
        rows, release = self.schedule.rows(phase), self.releases[phase - 1]
        for seen, t in enumerate(range(rows.start, rows.stop), start=1):
            example = {key: value[:, t:t + 1] for key, value in self.examples.items()}
            grads = self.model.per_example_grads({self.block.name: point}, example)
            point = self.block.project(point - step * clipped_sum(grads[self.block.name],
                                                                  release.clip))
            average = average + (point - average) / seen
        self.done += 1
        self.state = {self.block.name: release.perturb(average, self.noise)}


PhasedSgdNonPrivate = nonprivate_twin(
    PhasedSgd, "PhasedSgdNonPrivate", name="phased_sgd_nonprivate",
    label="Phased SGD (non-private, Feldman et al. 2020 Alg. 2 without noise)",
    doc="Alg. 2's phases with the noise off and eta = 4 D / (L sqrt(n)).",
    fixed={"accountant": "rdp"})
