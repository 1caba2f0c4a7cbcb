"""What every method declares: a name, its parameters, a pure privacy plan and a batched program.

Following benchopt's solvers, a method is a small class with a ``name``, a ``parameters`` dict of
defaults (any of which an experiment may sweep), a :meth:`Method.plan` per run and a
:meth:`Method.program` that trains R runs (seeds x grid points) as one batched program. One
driver, :meth:`Method.fit`, runs every method's program (progress bar, monitor, result); the
non-private twin of a method is derived from it (:func:`nonprivate_twin`), and so is its noiseless
clipped control (:func:`noise_off_control`). Methods never read
globals: everything comes in through :class:`RunSpec` and the prepared dataset.
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np
import torch
from tqdm.auto import tqdm

from dpminimax.algorithms.params import CLIP, CLIP_OR_INF, Check, ParameterError, check_values
from dpminimax.data import PreparedDataset
from dpminimax.fit_result import FitResult, RunSpec  # below the tasks; public here too
from dpminimax.kernels.membership import member_count, shadow_indices
from dpminimax.privacy.accounting import accounting_record
from dpminimax.privacy.events import event_to_dict, non_private_event
from dpminimax.privacy.release import Part, Release, plan_event, releases_of, silenced
from dpminimax.tasks import FAIR_CLASSIFICATION, Task

#: The ``control`` of a noiseless clipped control's runs (:func:`noise_off_control`).
NOISE_OFF = "noise_off"


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

    def noise_off(self) -> RunPlan:
        """This plan with every release made without noise (:func:`~dpminimax.privacy.release.
        silenced`): the same values, releases, clips and counts. Its record claims nothing
        (epsilon inf, guarantee not covered, ``control: noise_off``); the planned epsilons and
        event are kept as ``planned_<key>``."""
        planned = {key: value for key, value in self.record.items()
                   if key.startswith("epsilon") or key == "event"}
        record = {key: value for key, value in self.record.items() if key not in planned}
        return RunPlan(silenced(self.releases), self.values, {
            **record, **{f"planned_{key}": value for key, value in planned.items()},
            "epsilon": math.inf, "event": event_to_dict(non_private_event()),
            "guarantee_covered": False, "control": NOISE_OFF})

    def release(self, name: str) -> Release:
        """The release called ``name`` (the program noises with exactly this object)."""
        for release in releases_of(self.releases):
            if release.name == name:
                return release
        raise KeyError(f"the plan makes no release {name!r}; it makes "
                       f"{[r.name for r in releases_of(self.releases)]}")


#: Called after every training step with (steps done, batched model, state of all runs).
Monitor = Callable[[int, Any, dict[str, torch.Tensor]], None]

T = TypeVar("T")


class Program(Protocol):
    """R runs of one method as one batched program: :meth:`step` advances every run by one
    step (a run that has taken its planned steps stays as it is); ``state`` is what the runs
    output (leading run axis) and ``model`` the batched model that reads it. A program may
    also keep ``counters``, one dict of counts per run (:attr:`FitResult.counters`), and
    ``samples``, each run's own training sample (:attr:`FitResult.samples`)."""

    model: Any
    #: The number of :meth:`step` calls that train every run to its end.
    steps: int

    @property
    def state(self) -> dict[str, torch.Tensor]: ...

    def step(self) -> None: ...


class UnknownParameterError(ParameterError):
    """An experiment set a parameter the method does not have."""


class Method(ABC):
    """A training method. Subclasses set ``name``, ``label``, ``private`` and ``parameters``."""

    name: ClassVar[str]
    label: ClassVar[str]
    #: The paper it is built for: the id of its ``papers/<id>/`` folder (a baseline: the paper
    #: whose experiments first run it).
    paper: ClassVar[str]
    #: The algorithm as published: authors or paper number, year, algorithm or equation.
    source: ClassVar[str]
    private: ClassVar[bool]
    parameters: ClassVar[dict[str, Any]]
    #: What the values of the parameters must be (:mod:`dpminimax.algorithms.params`), checked
    #: by :meth:`resolve` on every value an experiment sets.
    checks: ClassVar[dict[str, Check]] = {}
    #: Parameters that must take one value per batched program (sampling rate, step count,
    #: shapes); runs differing in them are fitted as separate programs.
    shared_parameters: ClassVar[tuple[str, ...]] = ()
    #: What the runs are evaluated on and whether they are attacked (:mod:`dpminimax.tasks`).
    task: ClassVar[Task] = FAIR_CLASSIFICATION
    #: Whether training reads the sensitive attribute (fair-learning methods do; DP-SGD only
    #: evaluates fairness).
    uses_sensitive_attribute: ClassVar[bool] = True
    #: Parameters held at these values whatever an experiment says (a non-private twin's: no
    #: noise, no clipping; see :func:`nonprivate_twin`).
    fixed: ClassVar[dict[str, Any]] = {}
    #: The name of the method's non-private twin (set by :func:`nonprivate_twin`).
    twin: ClassVar[str | None] = None
    #: :data:`NOISE_OFF` for a noiseless clipped control (:func:`noise_off_control`): planned as
    #: the private method at its epsilon, every release made without noise.
    control: ClassVar[str | None] = None
    #: Whether the program trains shadow runs (``RunSpec.shadow``) on their member rows only
    #: (:mod:`dpminimax.kernels.membership`), which the LiRA attack needs.
    shadowable: ClassVar[bool] = False

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
        return {**self.parameters, **params, **self.fixed}

    def calibrate(self, run: RunSpec, private: Callable[[], T], nonprivate: T) -> T:
        """What a plan calibrates to the run's (epsilon, delta): ``private()`` for a private
        method (its epsilon must be finite), ``nonprivate`` (no noise) for a non-private one
        (its epsilon must be inf)."""
        if self.private and is_non_private(run.epsilon):
            raise ValueError(f"method {self.name!r} is private; for epsilon = inf use "
                             f"{self.twin!r}")
        if not self.private and not is_non_private(run.epsilon):
            raise ValueError(f"method {self.name!r} is not private; its epsilon must be 'inf', "
                             f"got {run.epsilon:g}")
        return private() if self.private else nonprivate

    def preflight(self, data: PreparedDataset, runs: Sequence[RunSpec]) -> None:
        """Check, without training, that ``runs`` can be planned on ``data``: the error
        :meth:`fit` would raise at its start (an infeasible privacy plan, a parameter that must
        be shared) is raised here. Methods whose noise is calibrated to the target from any
        step count only need the parameter checks; methods with a fixed noise component
        override this with their planning."""
        shared_values([self.resolve(run.params) for run in runs], self.shared_parameters,
                      self.name)

    def plan_reads_data(self, shared: Mapping[str, Any]) -> bool:
        """Whether :meth:`plan` needs the training data itself, not only its size n, with the
        runs' ``shared`` values (then the workflow cannot plan the job before its data is
        loaded: :mod:`dpminimax.feasibility`); no by default."""
        return False

    @abstractmethod
    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """The privacy plan of ``run`` on ``n`` training examples, without training (pure:
        ``dpminimax account --method`` prints its epsilon, and :meth:`fit` noises with its
        releases). ``data`` is needed only by plans calibrated from training-set statistics
        (DP-FERMI's Thm. 3.3 reads the group counts); others ignore it."""

    def plan_runs(self, data: PreparedDataset, runs: Sequence[RunSpec]
                  ) -> tuple[list[dict[str, Any]], dict[str, Any], list[RunPlan]]:
        """The start of every fit: ``(resolved params, shared values, plans)`` of ``runs`` on
        ``data`` (refused by :meth:`check_data` first), each run's planned values (steps,
        noise multipliers...) added to its params."""
        resolved = [self.resolve(run.params) for run in runs]
        shared = shared_values(resolved, self.shared_parameters, self.name)
        self.check_data(data, shared)
        n = self.sample_size(data, shared)
        if any(run.shadow is not None for run in runs):
            n = self.shadow_sample_size(runs, n)
        plans = [self.plan(run, n, data) for run in runs]
        if self.control == NOISE_OFF:
            plans = [plan.noise_off() for plan in plans]
        for params, plan in zip(resolved, plans, strict=True):
            params.update(plan.values)
        return resolved, shared, plans

    def extra_metrics(self, fit: FitResult, data: PreparedDataset,
                      device: torch.device) -> list[dict[str, float]]:
        """Method-specific metrics per run (for example constraint satisfaction); none here."""
        return [{} for _ in fit.runs]

    def training_violation(self, resolved: Sequence[dict[str, Any]], data: PreparedDataset,
                           device: torch.device) -> Callable[[torch.Tensor], torch.Tensor]:
        """``violation(predicted (R, n) class labels) -> (R,)``: each run's largest violation of
        its own constraints by hard predictions on the training set (<= 0: met), which the
        tuning's checkpoint rule reads (RaCO-DP App. E.2); -inf for an unconstrained method."""
        return lambda predicted: torch.full((predicted.shape[0],), float("-inf"),
                                            device=predicted.device)

    def sample_size(self, data: PreparedDataset, shared: dict[str, Any]) -> int:
        """The number of training examples n the runs are planned on: the dataset's, or the
        fixed ``meta["planned_size"]`` of an audited dataset, whose size depends on which
        canaries were drawn in (:mod:`dpminimax.attacks.canaries`); a synthetic task's method
        draws its own sample and says its size."""
        return int(data.meta.get("planned_size", len(data.y_train)))

    def shadow_sample_size(self, runs: Sequence[RunSpec], pool: int) -> int:
        """The sample size of shadow runs drawn from ``pool`` training rows (each trains on
        its half); refused for a method whose program does not map its batches through the
        runs' member rows (:attr:`shadowable`) and for a mix of shadow and ordinary runs."""
        if not self.shadowable:
            raise ValueError(f"method {self.name!r} cannot train shadow models: its program "
                             "does not restrict runs to their member rows (shadowable = False)")
        shadow_indices([run.shadow for run in runs])  # refuses a mix
        return member_count(pool)

    def check_data(self, data: PreparedDataset, shared: dict[str, Any]) -> None:
        """Refuse data the method cannot train on with the job's ``shared`` values (labels,
        kinds, groups, model), naming what it found; every dataset by default."""
        return None

    @abstractmethod
    def program(self, data: PreparedDataset, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> Program:
        """The batched program of ``runs`` (:meth:`plan_runs` gave ``resolved``, ``shared``
        and ``plans``): every noise it adds is one of the plans' releases."""

    def fit(self, data: PreparedDataset, runs: Sequence[RunSpec], device: torch.device,
            monitor: Monitor | None = None) -> FitResult:
        """The driver: plan ``runs``, build their program and step it to the end with a
        progress bar; ``monitor(step, model, state)`` (if given) is called after every step
        (the tuning protocol keeps its checkpoints so, and the workflow's finite guard stops a
        diverged run there). The accounting records are the plans'."""
        resolved, shared, plans = self.plan_runs(data, runs)
        program = self.program(data, runs, resolved, shared, plans, device)
        for step in tqdm(range(1, program.steps + 1), desc=f"{self.name} x{len(runs)} runs",
                         mininterval=5.0, leave=False):
            program.step()
            if monitor is not None:
                monitor(step, program.model, program.state)
        return FitResult(program.model, program.state, list(runs),
                         [dict(plan.record) for plan in plans], self, resolved,
                         [dict(c) for c in getattr(program, "counters", [])],
                         list(getattr(program, "samples", [])))


M = TypeVar("M", bound=Method)


def nonprivate_twin(private: type[M], class_name: str, *, name: str, label: str, doc: str,
                    fixed: Mapping[str, Any], kept: Mapping[str, Any] | None = None
                    ) -> type[M]:
    """The non-private twin of ``private`` (issue #17): the same plan and program with the
    privacy parameters held at ``fixed`` (no noise, no clipping), so the two differ only in
    privacy; its plan's calibrations give their non-private values (:meth:`Method.calibrate`)
    and its epsilon must be inf. ``kept`` are privacy parameters the twin still exposes, with
    their twin defaults (RaCO-DP's clip, for its clipping-bias study).

    A twin is named ``<private method>_nonprivate`` (issue #41; old names are refused with the
    new one, :data:`~dpminimax.algorithms.RENAMED`), except where it is a paper's own
    non-private algorithm or reference, shared by several private methods: the bilevel paper's
    NP baselines ``np_aid`` / ``np_grid`` / ``np_pen``, BYOA's exact solutions
    ``exact_solution`` / ``phased_exact`` / ``csc_exact`` / ``phased_minimax_exact``, DP-DRO's
    SCDRO ``scdro`` and its ``<method>_control`` controls."""
    kept = dict(kept or {})
    parameters = {key: value for key, value in private.parameters.items()
                  if key not in fixed} | kept
    twin = type(class_name, (private,), {
        "__doc__": doc, "__module__": private.__module__, "__qualname__": class_name,
        "name": name, "label": label, "private": False, "parameters": parameters,
        "source": f"{private.source}, without privacy", "fixed": {**private.fixed, **fixed},
        # without noise a kept clip norm may be inf (no clipping)
        "checks": {key: CLIP_OR_INF if check is CLIP else check
                   for key, check in private.checks.items() if key in parameters},
    })
    private.twin = name
    return twin


def noise_off_control(private: type[M]) -> type[M]:
    """The noiseless clipped control of the private method ``private`` (issue #38: is a gap
    privacy or optimization?), ``<name>_noise_off``: the private run with only its noise
    removed. Its plan is the private method's at the run's epsilon (sampling rate, step count,
    clips, histogram / count releases, dual steps, planned noise multipliers: all as planned),
    then :meth:`RunPlan.noise_off`: every release is made with noise std 0, and the record
    claims no privacy (epsilon inf, the planned epsilon kept as ``planned_epsilon``)."""
    if not private.private:
        raise ValueError(f"method {private.name!r} is not private: it has no noise to remove")
    class_name = f"{private.__name__}NoiseOff"
    return type(class_name, (private,), {
        "__doc__": f"{private.label} planned at its epsilon, every release without noise.",
        "__module__": private.__module__, "__qualname__": class_name,
        "name": f"{private.name}_{NOISE_OFF}", "label": f"{private.label} (noise off)",
        "source": f"{private.source}, noise off", "control": NOISE_OFF,
    })


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


def per_run(resolved: Sequence[Mapping[str, Any]], key: str,
            device: torch.device | str | None = None) -> torch.Tensor:
    """The runs' values (R,) of the numeric parameter ``key`` (a batched program's step sizes,
    temperatures...)."""
    return torch.tensor([float(p[key]) for p in resolved], device=device)


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


def shared_groups(method: Method, runs: Sequence[RunSpec]) -> list[list[RunSpec]]:
    """``runs`` split into the groups that can train as one batched program: one per distinct
    value of the method's shared parameters (a rate study's sample sizes n, for instance), in
    the order the values first appear."""
    groups: dict[tuple[str, ...], list[RunSpec]] = {}
    for run in runs:
        resolved = method.resolve(run.params)
        key = tuple(repr(resolved.get(name)) for name in method.shared_parameters)
        groups.setdefault(key, []).append(run)
    return list(groups.values())
