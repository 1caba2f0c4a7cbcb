"""What every method declares: a name, its parameters, its privacy event and a batched fit.

Following benchopt's solvers, a method is a small class with a ``name``, a ``parameters`` dict of
defaults (any of which an experiment may sweep) and a ``fit`` that trains R runs (seeds x grid
points) as one batched program. Methods never read globals: everything comes in through
:class:`RunSpec` and the prepared dataset.
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from dpminimax.algorithms.params import Check, ParameterError, check_values
from dpminimax.data import PreparedDataset
from dpminimax.privacy.accounting import accounting_record
from dpminimax.privacy.release import Part, Release, plan_event, releases_of


@dataclass(frozen=True)
class RunSpec:
    """One run: a seed, a privacy target and a full set of hyper-parameter values."""

    seed: int
    epsilon: float
    delta: float
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        grid = ",".join(f"{k}={self.params[k]}" for k in sorted(self.params))
        return f"seed={self.seed};eps={self.epsilon:g};{grid}"


@dataclass
class FitResult:
    """R trained runs: the batched model, its state (leading run axis) and per-run privacy."""

    model: Any
    state: dict[str, torch.Tensor]
    runs: list[RunSpec]
    accounting: list[dict]
    resolved_params: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class RunPlan:
    """One run's privacy plan (issue #17): the tree of releases it makes (:mod:`
    dpminimax.privacy.release`), the values planned for it (sampling rate, steps, noise
    multipliers: recorded beside its parameters) and its accounting record, computed from the
    event DERIVED from those releases, the same objects the program adds noise with."""

    releases: Part
    values: dict[str, Any]
    record: dict[str, Any]

    @classmethod
    def account(cls, releases: Part, values: Mapping[str, Any], delta: float,
                accountant: str = "rdp", **extras: Any) -> RunPlan:
        """The plan of ``releases`` with the accounting record of their event (plus
        ``extras``, for example the epsilon of a paper's own accounting)."""
        record = accounting_record(plan_event(releases), delta, accountant)
        return cls(releases, dict(values), {**record, **extras})

    def event(self):
        return plan_event(self.releases)

    def release(self, name: str) -> Release:
        """The release called ``name`` (the program noises with exactly this object)."""
        for release in releases_of(self.releases):
            if release.name == name:
                return release
        raise KeyError(f"the plan makes no release {name!r}; it makes "
                       f"{[r.name for r in releases_of(self.releases)]}")


#: Called after every training step with (steps done, batched model, state of all runs).
Monitor = Callable[[int, Any, dict[str, torch.Tensor]], None]


class UnknownParameterError(ParameterError):
    """An experiment set a parameter the method does not have."""


class Method(ABC):
    """A training method. Subclasses set ``name``, ``label``, ``private`` and ``parameters``."""

    name: ClassVar[str]
    label: ClassVar[str]
    #: The paper it reproduces (a short id of papers/) or the work a baseline re-implements.
    paper: ClassVar[str]
    private: ClassVar[bool]
    parameters: ClassVar[dict[str, Any]]
    #: What the values of the parameters must be (:mod:`dpminimax.algorithms.params`), checked
    #: by :meth:`resolve` on every value an experiment sets.
    checks: ClassVar[dict[str, Check]] = {}
    #: Parameters that must take one value per batched program (sampling rate, step count,
    #: shapes); runs differing in them are fitted as separate programs.
    shared_parameters: ClassVar[tuple[str, ...]] = ()
    #: Whether training reads the sensitive attribute (fair-learning methods do; DP-SGD only
    #: evaluates fairness).
    uses_sensitive_attribute: ClassVar[bool] = True

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults overridden by ``params``; an unknown name or a value its check refuses
        (a list: each swept value) is an error naming the parameter."""
        unknown = sorted(set(params) - set(self.parameters))
        if unknown:
            raise UnknownParameterError(
                f"method {self.name!r} has no parameter(s) {unknown}; "
                f"known: {sorted(self.parameters)}"
            )
        check_values(self.name, params, self.checks)
        return {**self.parameters, **params}

    def preflight(self, data: PreparedDataset, runs: Sequence[RunSpec]) -> None:
        """Check, without training, that ``runs`` can be planned on ``data``: the error
        :meth:`fit` would raise at its start (an infeasible privacy plan, a parameter that must
        be shared) is raised here. Methods whose noise is calibrated to the target from any
        step count only need the parameter checks; methods with a fixed noise component
        override this with their planning."""
        shared_values([self.resolve(run.params) for run in runs], self.shared_parameters,
                      self.name)

    @abstractmethod
    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """The privacy plan of ``run`` on ``n`` training examples, without training (pure:
        ``dpminimax account --method`` prints its epsilon, and :meth:`fit` noises with its
        releases). ``data`` is needed only by plans calibrated from training-set statistics
        (DP-FERMI's Thm. 3.3 reads the group counts); others ignore it."""

    def plan_runs(self, data: PreparedDataset, runs: Sequence[RunSpec]
                  ) -> tuple[list[dict[str, Any]], dict[str, Any], list[RunPlan]]:
        """The start of every fit: ``(resolved params, shared values, plans)`` of ``runs`` on
        ``data``, each run's planned values (steps, noise multipliers...) added to its
        params."""
        resolved = [self.resolve(run.params) for run in runs]
        shared = shared_values(resolved, self.shared_parameters, self.name)
        plans = [self.plan(run, len(data.y_train), data) for run in runs]
        for params, plan in zip(resolved, plans, strict=True):
            params.update(plan.values)
        return resolved, shared, plans

    def extra_metrics(self, fit: FitResult, data: PreparedDataset,
                      device: torch.device) -> list[dict[str, float]]:
        """Method-specific metrics per run (for example constraint satisfaction); none here."""
        return [{} for _ in fit.runs]

    @abstractmethod
    def fit(self, data: PreparedDataset, runs: Sequence[RunSpec], device: torch.device,
            monitor: Monitor | None = None) -> FitResult:
        """Train all ``runs`` as one batched program and return their states;
        ``monitor(step, model, state)`` (if given) is called after every step (the tuning
        protocol keeps its checkpoints so, for every method)."""


def require_tabular(data: PreparedDataset, method: str) -> None:
    """Linear-model methods train on feature matrices: refuse image-file datasets clearly."""
    if data.kind != "tabular":
        raise ValueError(
            f"method {method!r} trains a logistic-regression model on tabular features; "
            f"dataset {data.name!r} is of kind {data.kind!r} (its arrays are not features)"
        )


def require_binary_labels(data: PreparedDataset, method: str) -> None:
    """Binary classifiers of tabular features: refuse other data, naming the labels found."""
    require_tabular(data, method)
    labels = sorted(np.unique(data.y_train).tolist())
    if not set(labels) <= {0, 1}:
        raise ValueError(f"method {method!r} trains a binary classifier (binary labels in "
                         f"{{0, 1}}); dataset {data.name!r} has labels {labels}")


def expand_runs(
    seeds: Sequence[int], epsilon: float, delta: float, grid: Mapping[str, Any]
) -> list[RunSpec]:
    """Runs for every seed x every combination of the grid (a list value is swept)."""
    names = sorted(grid)
    values = [grid[k] if isinstance(grid[k], list) else [grid[k]] for k in names]
    return [
        RunSpec(seed=int(seed), epsilon=float(epsilon), delta=float(delta),
                params=dict(zip(names, combo, strict=True)))
        for combo in itertools.product(*values)
        for seed in seeds
    ]


def is_non_private(epsilon: float) -> bool:
    """Whether the privacy target is "no privacy" (epsilon = inf)."""
    return math.isinf(epsilon)


def shared_values(resolved: Sequence[Mapping[str, Any]], names: Sequence[str],
                  method: str) -> dict[str, Any]:
    """Values that must be equal across the runs of one batched job (they fix the sampling
    rate, the step count or the shapes shared by the batched runs); an error names the first
    parameter that varies."""
    shared = {}
    for name in names:
        values = {repr(p[name]): p[name] for p in resolved}
        if len(values) != 1:
            raise ValueError(
                f"method {method!r}: parameter {name!r} must have one value per job "
                f"(it fixes what the batched runs share: sampling rate, step count or shapes); "
                f"got {sorted(values)}"
            )
        shared[name] = next(iter(values.values()))
    return shared
