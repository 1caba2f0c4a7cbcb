"""What every method over a synthetic problem shares (:mod:`dpminimax.problems`): the problem
instance from its parameters, each run's own sample, and the synthetic-optimization task."""

from __future__ import annotations

import functools
import inspect
import math
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import Method, RunSpec
from dpminimax.algorithms.params import COUNT, NON_NEGATIVE, Check, one_of
from dpminimax.data import PreparedDataset
from dpminimax.problems import PROBLEMS, Problem, get_problem
from dpminimax.seeding import make_generator
from dpminimax.tasks import SYNTHETIC_OPTIMIZATION

#: ``tau`` as a power of n: "n^-0.5" is tau = n^-0.5 (our grid: l D / L in {1, n^(1/4),
#: n^(1/2), n^(3/4)} through P3's tau).
_POWER_OF_N = re.compile(r"^n\^(-?[0-9]*\.?[0-9]+)$")
DEFAULT_TAU = "default"

#: The parameters of every problem method: which problem, which instance, how many examples,
#: the dimension d (of every block) and, for problems with one (P3), the smoothness scale tau
#: ("default": the problem's own; a number; or "n^p", a power of the run's n).
PROBLEM_PARAMETERS: dict[str, Any] = {"problem": "g1_quadratic_game", "instance": 0, "n": 1024,
                                      "d": 10, "tau": DEFAULT_TAU}
PROBLEM_CHECKS: dict[str, Check] = {
    "problem": one_of(*PROBLEMS), "instance": NON_NEGATIVE, "n": COUNT, "d": COUNT,
    "tau": Check(f"{DEFAULT_TAU!r}, a number > 0 or a power of n such as 'n^-0.5'",
                 lambda v: v == DEFAULT_TAU or (isinstance(v, str) and bool(_POWER_OF_N.match(v)))
                 or (isinstance(v, (int, float)) and not isinstance(v, bool)
                     and math.isfinite(v) and v > 0))}
#: The parameters that fix a job's problem instance (shared by its runs).
PROBLEM_SHARED: tuple[str, ...] = ("problem", "instance", "n", "d", "tau")


class ProblemMethod(Method):
    """A method whose data is a sample it draws from a problem (not a prepared dataset)."""

    task = SYNTHETIC_OPTIMIZATION
    uses_sensitive_attribute: ClassVar[bool] = False

    @staticmethod
    def problem(params: dict[str, Any]) -> Problem:
        """The problem instance of resolved ``params`` (fixed by ``instance``, ``d`` and
        ``tau``; shared by the runs of a job)."""
        return _problem(str(params["problem"]), int(params["instance"]),
                        int(params.get("d", PROBLEM_PARAMETERS["d"])),
                        problem_tau(params.get("tau", DEFAULT_TAU), int(params["n"])))

    def minimization_problem(self, params: dict[str, Any]) -> Problem:
        """:meth:`problem`, refused where it maximizes a block (a method for minimization)."""
        problem = self.problem(params)
        if problem.maximized:
            raise ValueError(f"method {self.name!r} is for minimization; problem "
                             f"{params['problem']!r} is a min-max problem")
        return problem

    @staticmethod
    def sample(problem: Problem, run: RunSpec, params: dict[str, Any],
               device: torch.device) -> dict[str, torch.Tensor]:
        """Run ``run``'s training sample: ``n`` examples from its own stream ``"data"``."""
        return {key: value.to(device) for key, value in problem.sample(
            int(params["n"]), make_generator(run.seed, "data")).items()}

    def samples(self, problem: Problem, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], device: torch.device
                ) -> list[dict[str, torch.Tensor]]:
        """Every run's training sample (:meth:`sample`), in run order."""
        return [self.sample(problem, run, params, device)
                for run, params in zip(runs, resolved, strict=True)]

    def sample_size(self, data: PreparedDataset | None, shared: dict[str, Any]) -> int:
        return int(shared["n"])

    @staticmethod
    def utility_bounds(problem: Problem, n: int, epsilon: float,
                       delta: float) -> dict[str, float]:
        """The paper's printed bound on the expectation of each metric (:mod:`.utility_bounds`;
        none here: a method with a theorem overrides this)."""
        return {}


def problem_tau(value: Any, n: int) -> float | None:
    """The tau of parameter ``value`` at sample size n (None: the problem's default)."""
    if value == DEFAULT_TAU:
        return None
    if isinstance(value, str):
        return float(n) ** float(_POWER_OF_N.match(value).group(1))
    return float(value)


@functools.lru_cache(maxsize=64)
def _problem(name: str, instance: int, d: int, tau: float | None) -> Problem:
    options: dict[str, Any] = {"seed": instance, "d": d}
    if tau is not None:
        tunable = sorted(key for key, cls in PROBLEMS.items()
                         if "tau" in inspect.signature(cls).parameters)
        if name not in tunable:
            raise ValueError(f"problem {name!r} has no smoothness scale tau (only {tunable} "
                             "do); leave the parameter tau at 'default'")
        options["tau"] = tau
    return get_problem(name, **options)
