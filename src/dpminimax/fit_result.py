"""What a fit hands on: its runs (:class:`RunSpec`) and their result (:class:`FitResult`).

Below both the methods (:mod:`dpminimax.algorithms`, which produce a result) and the tasks
(:mod:`dpminimax.tasks`, which evaluate one): a task reads a result only, and what it needs of
the method that fitted it travels with the result as a :class:`FittingMethod` (issue #41).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch


@dataclass(frozen=True)
class RunSpec:
    """One run: a seed, a privacy target and a full set of hyper-parameter values; a shadow
    model (``shadow``: its index) trains on its own half of the training rows only
    (:mod:`dpminimax.kernels.membership`)."""

    seed: int
    epsilon: float
    delta: float
    params: Mapping[str, Any] = field(default_factory=dict)
    shadow: int | None = None

    @property
    def run_id(self) -> str:
        grid = ",".join(f"{k}={self.params[k]}" for k in sorted(self.params))
        shadow = "" if self.shadow is None else f"shadow={self.shadow};"
        return f"{shadow}seed={self.seed};eps={self.epsilon:g};{grid}"


class FittingMethod(Protocol):
    """What a task reads of the method that fitted a result: its ``name`` and its own metrics
    (:meth:`extra_metrics`); a method whose task draws its own data also gives
    ``problem(params)``, the instance of its resolved parameters, and ``utility_bounds(problem,
    n, epsilon, delta)``, its paper's bounds (:class:`~dpminimax.algorithms.problem_method.
    ProblemMethod`)."""

    name: str

    def extra_metrics(self, fit: FitResult, data: Any,
                      device: torch.device) -> list[dict[str, float]]: ...


@dataclass
class FitResult:
    """R trained runs: the batched model, its state (leading run axis) and per-run privacy,
    and the method that fitted them (what its task reads of it: :class:`FittingMethod`)."""

    model: Any
    state: dict[str, torch.Tensor]
    runs: list[RunSpec]
    accounting: list[dict]
    method: FittingMethod
    resolved_params: list[dict] = field(default_factory=list)
    #: Per-run counts the program kept while training (its optional ``counters``: BYOA's base
    #: solvers' gradient evaluations), which the task adds to each run's metric row; empty
    #: when it keeps none.
    counters: list[dict] = field(default_factory=list)
    #: Each run's training sample where the program drew its own data (a synthetic problem's
    #: runs: the program's optional ``samples``), which the task measures the empirical
    #: quantities on; empty otherwise.
    samples: list[dict] = field(default_factory=list)
