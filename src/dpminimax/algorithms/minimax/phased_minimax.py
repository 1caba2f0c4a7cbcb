"""BYOA (paper 003) Algorithms 4 and 5, phased output perturbation for convex-concave min-max,
composed as in Theorem 4.8, and the convex-strongly-concave variant of Alg. 4 (Corollary 4.9),
with the exact base solver.

K = floor(log2 n) phases on disjoint chunks of nbar = floor(n / K) examples; phase k solves its
chunk's regularized saddle-point problem exactly and releases one block (x~_k for Alg. 4 and
Cor. 4.9, y~_k for Alg. 5) with Gaussian noise, sensitivity 4L / (nbar sqrt(mu_k m)), m = mu
(Lemma 4.5) or min(mu_k, mu_y) (Cor. 4.9). The C-C program interleaves Algs. 4 and 5 and
outputs (x~_K, y~_K); the C-SC program outputs x only.

Derivation and choices: papers/byoa/NOTES.md, section "Phases, sensitivities and mu of
Algorithms 4 and 5"; privacy: section "Privacy of Algorithms 4 and 5 and Corollary 4.9".
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.minimax.output_perturbation import (
    PROJECT_CHECKS,
    PROJECT_PARAMETERS,
    SOLVER_CHECKS,
    SOLVER_PARAMETERS,
    BaseSolvers,
    output_plan,
)
from dpminimax.algorithms.minimax.phased_output_perturbation import (
    PhasedProgram,
    PhaseTarget,
    Side,
    phase_schedule,
    phase_sensitivities,
    phased_releases,
)
from dpminimax.algorithms.minimax.utility_bounds import csc_bounds, phased_minimax_bounds
from dpminimax.algorithms.params import ACCOUNTANT, Check, one_of
from dpminimax.algorithms.problem_method import (
    PROBLEM_CHECKS,
    PROBLEM_PARAMETERS,
    PROBLEM_SHARED,
    ProblemMethod,
)
from dpminimax.data import PreparedDataset
from dpminimax.privacy.release import Repeat
from dpminimax.problems import Block, Problem
from dpminimax.solvers import Target, check_solver

SHARED = (*PROBLEM_SHARED, "sigma", "accountant", "stopping", "project")


def cc_regularization(lipschitz: float, diameter: float, dim: int, n: int, epsilon: float,
                      delta: float) -> float:
    """Theorem 4.8's mu = (L / D) max(2 / sqrt(n), 13 log2(n) sqrt(d ln(5 / delta)) /
    (n epsilon)); at epsilon = inf the statistical term 2 (L / D) / sqrt(n)."""
    privacy = 0.0 if math.isinf(epsilon) else 13.0 * math.log2(n) * math.sqrt(
        dim * math.log(5.0 / delta)) / (n * epsilon)
    return lipschitz / diameter * max(2.0 / math.sqrt(n), privacy)


def csc_regularization(lipschitz: float, diameter: float, dim_x: int, n: int, epsilon: float,
                       delta: float) -> float:
    """Corollary 4.9's mu = 3 (L / D) max(1 / sqrt(n), 4 log2(n) sqrt(d_x ln(2.5 / delta)) /
    (n epsilon)); at epsilon = inf the statistical term 3 (L / D) / sqrt(n)."""
    privacy = 0.0 if math.isinf(epsilon) else 4.0 * math.log2(n) * math.sqrt(
        dim_x * math.log(2.5 / delta)) / (n * epsilon)
    return 3.0 * lipschitz / diameter * max(1.0 / math.sqrt(n), privacy)


def game_blocks(problem: Problem, method: str, name: str) -> tuple[Block, Block]:
    """The (minimized, maximized) blocks of a min-max problem; any other problem is refused."""
    if len(problem.minimized) != 1 or len(problem.maximized) != 1:
        raise ValueError(f"method {method!r} solves a min-max problem over one minimized and one "
                         f"maximized block; problem {name!r} is not one")
    return problem.block(problem.minimized[0]), problem.block(problem.maximized[0])


class PhasedGameMethod(ProblemMethod):
    """What Algs. 4 o 5 and the C-SC variant share: parameters, and the phased program of
    :meth:`sides`."""

    paper: ClassVar[str] = "byoa"
    source: ClassVar[str] = "paper 003 (BYOA), Algs. 4 and 5"
    private: ClassVar[bool] = True
    checks: ClassVar[dict[str, Check]] = {**PROBLEM_CHECKS,
                                          "sigma": one_of("paper", "calibrated"),
                                          "accountant": ACCOUNTANT, **SOLVER_CHECKS,
                                          **PROJECT_CHECKS}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    @staticmethod
    @abstractmethod
    def sides(x: str, y: str) -> tuple[Side, ...]:
        """The algorithms the program runs, in the order it interleaves their phases."""

    @staticmethod
    @abstractmethod
    def target(problem: Problem) -> PhaseTarget:
        """A phase's accuracy condition (what its base solver certifies)."""

    def game(self, run: RunSpec) -> tuple[dict[str, Any], Problem, Block, Block]:
        """A run's resolved parameters, its game and the game's (x, y) blocks, with the base
        solver checked against the game (what every plan starts from)."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        x, y = game_blocks(problem, self.name, params["problem"])
        check_solver(params["solver"], problem, params["stopping"])
        return params, problem, x, y

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> PhasedProgram:
        problem = self.problem(shared)
        x, y = game_blocks(problem, self.name, shared["problem"])
        return PhasedProgram(problem, self.samples(problem, runs, resolved, device),
                             [run.seed for run in runs], resolved, plans,
                             BaseSolvers.of(resolved, runs), self.sides(x.name, y.name),
                             self.target(problem),
                             phase_schedule(int(shared["n"])),
                             project=bool(shared["project"]), device=device)


class PhasedMinimaxOutputPerturbation(PhasedGameMethod):
    """BYOA Algs. 4 o 5 (Theorem 4.8) on a convex-concave min-max problem (module
    docstring)."""

    name: ClassVar[str] = "phased_minimax_output_perturbation"
    label: ClassVar[str] = "Phased output perturbation for C-C min-max (BYOA Algs. 4 o 5)"
    parameters: ClassVar[dict[str, Any]] = {**PROBLEM_PARAMETERS, "problem": "g2_bilinear_game",
                                            "sigma": "paper", "accountant": "pld",
                                            **SOLVER_PARAMETERS, **PROJECT_PARAMETERS}
    utility_bounds = staticmethod(phased_minimax_bounds)

    @staticmethod
    def sides(x: str, y: str) -> tuple[Side, ...]:
        return (x, y), (y, x)

    @staticmethod
    def target(problem: Problem) -> PhaseTarget:
        """Alg. 4 line 4 (Alg. 5 symmetric): mu_k ||x_k - x*_k||^2 + mu ||y_k - y*_k||^2 <=
        L^2 / (mu nbar^2)."""
        lipschitz = problem.constants.lipschitz
        return lambda moduli, mu, chunk: Target(lipschitz / (math.sqrt(mu) * chunk), moduli)

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """K phases of Alg. 4 (releasing x) and K of Alg. 5 (releasing y): each algorithm's
        phases in parallel, the two algorithms composed."""
        params, problem, x, y = self.game(run)
        constants = problem.constants
        schedule = phase_schedule(n)
        mu = cc_regularization(constants.lipschitz, constants.diameter, max(x.dim, y.dim), n,
                               run.epsilon, run.delta)
        sensitivities = phase_sensitivities(constants.lipschitz, schedule, mu, mu)
        return output_plan(
            self, run, params, 2,
            lambda multiplier: Repeat((phased_releases(x.name, sensitivities, multiplier),
                                       phased_releases(y.name, sensitivities, multiplier))),
            {"phases": schedule.phases, "chunk": schedule.sizes[0], "mu": mu})


class CscOutputPerturbation(PhasedGameMethod):
    """The C-SC variant of BYOA Alg. 4 (Corollary 4.9): only x is regularized and released
    (module docstring)."""

    name: ClassVar[str] = "csc_output_perturbation"
    label: ClassVar[str] = "C-SC variant of BYOA Alg. 4 (Cor. 4.9)"
    parameters: ClassVar[dict[str, Any]] = {**PROBLEM_PARAMETERS, "problem": "g4_csc_game",
                                            "sigma": "paper", "accountant": "pld",
                                            **SOLVER_PARAMETERS, **PROJECT_PARAMETERS}
    utility_bounds = staticmethod(csc_bounds)

    @staticmethod
    def sides(x: str, y: str) -> tuple[Side, ...]:
        return ((x, None),)

    @staticmethod
    def target(problem: Problem) -> PhaseTarget:
        """Cor. 4.9: mu_k ||x_k - x*_k||^2 + mu_y ||y_k - y*_k||^2 <= L^2 / (nbar^2
        min(mu_k, mu_y))."""
        lipschitz = problem.constants.lipschitz
        (x,), (y,) = problem.minimized, problem.maximized
        concavity = problem.constants.strong_convexity[y]

        def target(moduli: dict[str, float], mu: float, chunk: int) -> Target:
            return Target(lipschitz / (chunk * math.sqrt(min(moduli[x], concavity))),
                          {x: moduli[x], y: concavity})
        return target

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """K phases releasing x, in parallel, with the sensitivity of the strong concavity."""
        params, problem, x, y = self.game(run)
        constants = problem.constants
        concavity = constants.strong_convexity[y.name]
        if not concavity > 0:
            raise ValueError(f"method {self.name!r} (BYOA Cor. 4.9) needs a problem strongly "
                             f"concave in {y.name}; problem {params['problem']!r} has "
                             f"mu_{y.name} = {concavity:g}")
        schedule = phase_schedule(n)
        mu = csc_regularization(constants.lipschitz, constants.diameter, x.dim, n, run.epsilon,
                                run.delta)
        sensitivities = phase_sensitivities(constants.lipschitz, schedule, mu, concavity)
        return output_plan(
            self, run, params, 1,
            lambda multiplier: phased_releases(x.name, sensitivities, multiplier),
            {"phases": schedule.phases, "chunk": schedule.sizes[0], "mu": mu})


PhasedMinimaxExact = nonprivate_twin(
    PhasedMinimaxOutputPerturbation, "PhasedMinimaxExact", name="phased_minimax_exact",
    label="Phased regularized saddle points (non-private, BYOA Algs. 4 o 5 without noise)",
    doc="Algs. 4 o 5's phases with the noise off and mu = 2 (L / D) / sqrt(n): the non-private "
        "reference of Sec. 3.2's worked example.",
    fixed={"sigma": "paper", "accountant": "pld"})

CscExact = nonprivate_twin(
    CscOutputPerturbation, "CscExact", name="csc_exact",
    label="Phased regularized C-SC saddle points (non-private, Cor. 4.9 without noise)",
    doc="The C-SC variant's phases with the noise off and mu = 3 (L / D) / sqrt(n).",
    fixed={"sigma": "paper", "accountant": "pld"})
