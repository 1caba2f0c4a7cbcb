"""What every method over a synthetic problem shares (:mod:`dpminimax.problems`): the problem
instance from its parameters, each run's own sample, and the synthetic-optimization task."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import Method, RunSpec
from dpminimax.algorithms.params import COUNT, NON_NEGATIVE, Check, one_of
from dpminimax.data import PreparedDataset
from dpminimax.problems import PROBLEMS, Problem, get_problem
from dpminimax.seeding import make_generator
from dpminimax.tasks import SYNTHETIC_OPTIMIZATION

#: The parameters of every problem method: which problem, which instance, how many examples.
PROBLEM_PARAMETERS: dict[str, Any] = {"problem": "g1_quadratic_game", "instance": 0, "n": 1024}
PROBLEM_CHECKS: dict[str, Check] = {"problem": one_of(*PROBLEMS), "instance": NON_NEGATIVE,
                                    "n": COUNT}


class ProblemMethod(Method):
    """A method whose data is a sample it draws from a problem (not a prepared dataset)."""

    task = SYNTHETIC_OPTIMIZATION
    uses_sensitive_attribute: ClassVar[bool] = False

    @staticmethod
    def problem(params: dict[str, Any]) -> Problem:
        """The problem instance of resolved ``params`` (fixed by ``instance``, shared by the
        runs of a job)."""
        return _problem(str(params["problem"]), int(params["instance"]))

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


@functools.lru_cache(maxsize=64)
def _problem(name: str, instance: int) -> Problem:
    return get_problem(name, seed=instance)
