"""A paper's grid (``papers/<id>/experiments.yaml``) expanded into training jobs.

The YAML file is the single source of truth for a paper's experiments. Its structure is checked
by the JSON schema in ``workflow/schemas/experiments.schema.yaml`` (Snakemake ``validate``); this
module adds the checks a schema cannot make (known methods and datasets, epsilon > 0, delta in
(0, 1), parameters the method really has) and raises :class:`ExperimentConfigError` naming the key.

A *job* is one (experiment, dataset, method, epsilon): all its seeds x grid points train as one
batched program (one per value of the method's shared parameters, e.g. each sample size n of a
rate study). A method whose task draws its own data (a synthetic problem with exact answers,
:mod:`dpminimax.problems`, bilevel ones included) lists *problems* where other methods list
datasets: the job's ``dataset`` is the problem's name, passed to the method as its ``problem``
parameter, and the job has no prepared data and is not attacked. A method may carry a
``tuning`` block (the RaCO-DP paper's protocol, see :mod:`dpminimax.tuning`); with
``tuning="protocol"`` its jobs are tuned first and train the chosen configurations, with
``tuning="none"`` the block is ignored and the listed params are used.
Each epsilon is parsed once into an :class:`~dpminimax.epsilon.Epsilon` (``1``, ``1.0`` and
``"1"`` are equal), whose label (``"1"``, ``"inf"`` for no privacy) names the job's paths and is
the ``epsilon`` of its run_config.json, so that paths never differ for equal values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dpminimax.algorithms import Method, UnknownMethodError, get_method
from dpminimax.algorithms.params import ParameterError
from dpminimax.data import get_dataset_spec, list_datasets
from dpminimax.epsilon import NON_PRIVATE, Epsilon, EpsilonError
from dpminimax.problems import BILEVEL_PROBLEMS, PROBLEMS
from dpminimax.tuning.protocol import TuningSpec, cell_grid, fixed_params
from dpminimax.tuning.search import SearchSpaceError

#: ``tuning`` values of the workflow config.
TUNING_MODES = ("protocol", "none")


class ExperimentConfigError(ValueError):
    """A paper's experiments.yaml or the workflow config is invalid; the message names the key."""


@dataclass(frozen=True)
class Job:
    """One training job of the workflow."""

    paper: str
    experiment: str
    dataset: str
    method: str
    epsilon: Epsilon
    delta: float
    seeds: tuple[int, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    scale: str = "default"
    tuning: Mapping[str, Any] | None = None
    #: False for a job on a synthetic problem (no prepared data, no membership attack).
    attacked: bool = True
    #: The folder its outputs go under (:func:`results_root`).
    results: str = "results"

    def __post_init__(self) -> None:
        if not isinstance(self.epsilon, Epsilon):
            raise TypeError(f"Job.epsilon must be an Epsilon (Epsilon.parse), got "
                            f"{self.epsilon!r}")

    @property
    def tuned(self) -> bool:
        return self.tuning is not None

    @property
    def gpus(self) -> int:
        """GPUs the job asks a cluster for (the workflow's ``gpu`` resource): 1 for a network
        (``model`` other than logistic regression) at the ``paper`` scale; 0 otherwise, since
        the smaller scales train CPU-sized networks for a few steps."""
        model = self.params.get("model", "logistic_regression")
        return int(self.scale == "paper" and model != "logistic_regression")

    @property
    def tune_dir(self) -> str:
        return (f"{self.results}/{self.paper}/tune/{self.experiment}/{self.dataset}/"
                f"{self.method}/eps~{self.epsilon}")

    @property
    def train_dir(self) -> str:
        return (f"{self.results}/{self.paper}/train/{self.experiment}/{self.dataset}/"
                f"{self.method}/eps~{self.epsilon}")

    @property
    def attack_path(self) -> str:
        return (f"{self.results}/{self.paper}/attack/{self.experiment}/{self.dataset}/"
                f"{self.method}/eps~{self.epsilon}/attack.parquet")

    def run_config(self, code_version: str) -> dict[str, Any]:
        return {
            "paper": self.paper, "experiment": self.experiment, "dataset": self.dataset,
            "method": self.method, "epsilon": str(self.epsilon), "delta": self.delta,
            "seeds": list(self.seeds), "params": dict(self.params), "scale": self.scale,
            "code_version": code_version,
            **({"tuning": dict(self.tuning)} if self.tuning is not None else {}),
        }


def results_root(dataset_override: list[str] | None) -> str:
    """Where a run's paper outputs go: ``results/``, or with a ``dataset_override`` a folder
    of its own (``results/override~<d1>+<d2>/``), so an override never replaces the outputs
    of the papers' own datasets. Prepared data stays in ``results/data/``, shared."""
    return f"results/override~{'+'.join(dataset_override)}" if dataset_override else "results"


def load_experiments(path: str | Path) -> dict[str, Any]:
    """Read a paper's experiments.yaml (structure is validated by the workflow's schema)."""
    path = Path(path)
    if not path.exists():
        raise ExperimentConfigError(f"{path}: no such experiments file")
    with open(path) as stream:
        return yaml.safe_load(stream)


def selected_papers(papers: list[str], selection: Mapping[str, Any] | None) -> list[str]:
    """The papers a run covers (the config's ``papers`` and ``experiments``): all of
    ``papers`` without a selection; with one, only those it names (``{paper: all}`` runs every
    experiment of that paper), so selecting experiments of one paper runs that paper only."""
    return [paper for paper in papers if not selection or paper in selection]


def select_experiments(spec: Mapping[str, Any], names: list[str] | str | None,
                       source: str = "experiments.yaml") -> dict[str, Any]:
    """``spec`` with only the experiments ``names`` (the config's ``experiments:`` entry for
    this paper; None or ``"all"`` keeps them all). Every figure, table and job of a left-out
    experiment is left out with it; the paper's claims on it read "NOT RUN"."""
    if names is None or names == "all":
        return dict(spec)
    unknown = [name for name in names if name not in spec["experiments"]]
    if unknown or not names:
        raise ExperimentConfigError(
            f"experiments.{spec['paper']}: must be a non-empty list of experiments of {source} "
            f"{sorted(spec['experiments'])}, got {list(names)}")
    return {**spec, "experiments": {name: experiment
                                    for name, experiment in spec["experiments"].items()
                                    if name in names}}


def _check_outputs(experiment: Mapping[str, Any], where: str) -> None:
    """Every figure and table an experiment asks for has a drawer (so a typo fails when the DAG
    is built, not at the report stage after all training)."""
    from dpminimax.report.registry import FIGURES, TABLES

    for key, known in (("figures", FIGURES), ("tables", TABLES)):
        for i, name in enumerate(experiment.get(key) or []):
            if name not in known:
                raise ExperimentConfigError(
                    f"{where}.{key}[{i}]: unknown {key[:-1]} {name!r}; known: {sorted(known)}")


def expand_jobs(
    spec: Mapping[str, Any], scale: str, *, source: str = "experiments.yaml",
    dataset_override: list[str] | None = None, tuning: str = "none",
) -> list[Job]:
    """Every job of one paper at ``scale``, after the semantic checks; ``tuning`` is
    ``"protocol"`` (tune the methods that have a tuning block) or ``"none"``."""
    if tuning not in TUNING_MODES:
        raise ExperimentConfigError(f"tuning: must be one of {TUNING_MODES}, got {tuning!r}")
    paper = spec["paper"]
    delta = _check_delta(spec.get("delta"), f"{source}: delta")
    jobs = []
    for exp_name, experiment in spec["experiments"].items():
        where = f"{source}: experiments.{exp_name}"
        exp_delta = (_check_delta(experiment["delta"], f"{where}.delta")
                     if "delta" in experiment else delta)
        scales = experiment.get("scales", {})
        if scale not in scales:
            raise ExperimentConfigError(
                f"{where}.scales: no entry for scale {scale!r} (have {sorted(scales)})")
        at_scale = scales[scale]
        seeds = _seed_list(at_scale.get("seeds"), f"{where}.scales.{scale}.seeds")
        methods = {}
        for method_name in experiment["methods"]:
            try:
                methods[method_name] = get_method(method_name)
            except UnknownMethodError as err:
                raise ExperimentConfigError(f"{where}.methods.{method_name}: {err}") from None
        on_problems = _on_problems(methods, where)
        known_data = (sorted({*PROBLEMS, *BILEVEL_PROBLEMS}) if on_problems
                      else list_datasets())
        for i, dataset in enumerate([*experiment["datasets"],
                                     *([] if on_problems else dataset_override or [])]):
            if dataset not in known_data:
                name = (f"datasets[{i}]" if i < len(experiment["datasets"])
                        else "dataset_override")
                kind = "problem" if on_problems else "dataset"
                raise ExperimentConfigError(
                    f"{where}.{name}: unknown {kind} {dataset!r}; known: {known_data}")
        _check_outputs(experiment, where)
        datasets = (_overridden(experiment["datasets"], dataset_override)
                    if dataset_override and not on_problems
                    else _scale_datasets(experiment["datasets"], at_scale,
                                         f"{where}.scales.{scale}"))
        scale_params = at_scale.get("params") or {}
        known = set().union(*(m.parameters for m in methods.values()))
        for key in scale_params:
            if key not in known:
                raise ExperimentConfigError(
                    f"{where}.scales.{scale}.params.{key}: no method of this experiment has "
                    f"this parameter (known: {sorted(known)})")
        by_method = _scale_method_params(at_scale, methods, f"{where}.scales.{scale}")
        for method_name, method_spec in experiment["methods"].items():
            if scale not in method_spec.get("scales", [scale]):
                continue  # a method run at some scales only (a diagnosis' control)
            m_where = f"{where}.methods.{method_name}"
            method = methods[method_name]
            listed = _epsilons(method_spec, method, m_where)
            epsilons = (_kept_epsilons(listed, at_scale, f"{where}.scales.{scale}")
                        if method.private else listed)
            if not epsilons:
                raise ExperimentConfigError(
                    f"{where}.scales.{scale}.epsilons: selects none of method {method_name!r}'s "
                    f"epsilons {method_spec.get('epsilons')}")
            by_epsilon = _epsilon_params(method_spec, listed, m_where)
            for eps in epsilons:
                params = {**(method_spec.get("params") or {}), **by_epsilon.get(eps, {}),
                          **{k: v for k, v in scale_params.items() if k in method.parameters},
                          **by_method.get(method_name, {})}
                tuned = (_tuning(method_spec, at_scale, params, f"{m_where}.tuning")
                         if tuning == "protocol" and "tuning" in method_spec else None)
                for dataset in datasets:
                    job_params = {**params, "problem": dataset} if on_problems else params
                    try:
                        method.resolve(job_params)
                    except ParameterError as err:
                        raise ExperimentConfigError(f"{m_where}.params: {err}") from None
                    jobs.append(Job(paper, exp_name, dataset, method_name, eps, exp_delta,
                                    seeds, job_params, scale, tuned,
                                    attacked=method.task.attacked and not on_problems,
                                    results=results_root(dataset_override)))
    return jobs


def _scale_method_params(at_scale: Mapping[str, Any], methods: Mapping[str, Any],
                         where: str) -> dict[str, dict[str, Any]]:
    """A scale's per-method params (``methods: {<method>: {params: {...}}}``), which win over
    the scale's ``params`` for that method alone (e.g. a grid point one method cannot run);
    every method and parameter named must be the experiment's."""
    out = {}
    for name, override in (at_scale.get("methods") or {}).items():
        if name not in methods:
            raise ExperimentConfigError(
                f"{where}.methods.{name}: not a method of this experiment "
                f"(have {sorted(methods)})")
        params = dict((override or {}).get("params") or {})
        for key in params:
            if key not in methods[name].parameters:
                raise ExperimentConfigError(
                    f"{where}.methods.{name}.params.{key}: method {name!r} has no such "
                    f"parameter (known: {sorted(methods[name].parameters)})")
        out[name] = params
    return out


def _on_problems(methods: Mapping[str, Any], where: str) -> bool:
    """Whether the experiment's methods train on synthetic problems (their task draws its own
    data) rather than prepared datasets; an experiment cannot mix the two."""
    draws = {name: method.task.draws_data for name, method in methods.items()}
    if len(set(draws.values())) > 1:
        raise ExperimentConfigError(
            f"{where}.methods: mixes methods on synthetic problems "
            f"{sorted(n for n, d in draws.items() if d)} with methods on datasets "
            f"{sorted(n for n, d in draws.items() if not d)}; put them in separate experiments")
    return bool(draws) and next(iter(draws.values()))


def _data_family(dataset: str) -> str:
    """"tabular" or "image" (image arrays and image files train the same networks)."""
    return "tabular" if get_dataset_spec(dataset).kind == "tabular" else "image"


def _scale_datasets(datasets: list[str], at_scale: Mapping[str, Any], where: str) -> list[str]:
    """The experiment's datasets kept by the scale's optional ``datasets`` filter (a smaller
    scale may leave out a dataset, e.g. a stand-in, to fit its time budget)."""
    keep = at_scale.get("datasets")
    if keep is None:
        return list(datasets)
    unknown = [d for d in keep if d not in datasets]
    if unknown or not keep:
        raise ExperimentConfigError(
            f"{where}.datasets: must be a non-empty subset of the experiment's datasets "
            f"{list(datasets)}, got {list(keep)}")
    return [d for d in datasets if d in keep]


def _overridden(datasets: list[str], override: list[str] | None) -> list[str]:
    """The datasets an experiment runs on: ``override``'s datasets of the experiment's family
    (tabular or image), or its own when the override has none of that family (a network
    experiment keeps its images under a tabular override, and the reverse)."""
    if not override:
        return list(datasets)
    family = {_data_family(d) for d in datasets}
    same = [d for d in override if _data_family(d) in family]
    return same or list(datasets)


def _seed_list(value: Any, where: str) -> tuple[int, ...]:
    """A scale's seeds: a list, or ``{from: s, count: c}`` for s, s + 1, ..., s + c - 1 (the
    200 seeds of a weak gap, our grid)."""
    if isinstance(value, Mapping):
        if set(value) != {"from", "count"} or int(value["count"]) < 1:
            raise ExperimentConfigError(f"{where}: a range is {{from: <seed>, count: <n >= 1>}}, "
                                        f"got {dict(value)}")
        return tuple(range(int(value["from"]), int(value["from"]) + int(value["count"])))
    if not value:
        raise ExperimentConfigError(f"{where}: missing or empty")
    return tuple(int(seed) for seed in value)


def _read_epsilon(value: Any, where: str) -> Epsilon:
    try:
        return Epsilon.parse(value, where)
    except EpsilonError as err:
        raise ExperimentConfigError(str(err)) from None


def _epsilons(method_spec: Mapping[str, Any], method: Method, where: str) -> list[Epsilon]:
    """The method's epsilons, each parsed once (``[inf]`` for a non-private method): finite,
    distinct, and each named exactly by its label (the job's paths and run_config.json)."""
    if not method.private:
        return [NON_PRIVATE]
    listed = method_spec.get("epsilons")
    if not listed:
        raise ExperimentConfigError(f"{where}.epsilons: a private method needs epsilons")
    out = []
    for i, value in enumerate(listed):
        key = f"{where}.epsilons[{i}]"
        eps = _read_epsilon(value, key)
        if not eps.is_private:
            raise ExperimentConfigError(
                f"{key}: a private method cannot have epsilon inf; "
                + (f"use its non-private twin {method.twin!r}" if method.twin
                   else "it has no non-private twin"))
        if not eps.labelled:
            raise ExperimentConfigError(
                f"{key}: {value!r} has more than the 6 significant digits of its label "
                f"{str(eps)!r} (its paths and run_config.json); write it with at most 6")
        if eps in out:
            raise ExperimentConfigError(f"{key}: duplicate of {str(eps)!r}")
        out.append(eps)
    return out


def _kept_epsilons(listed: list[Epsilon], at_scale: Mapping[str, Any],
                   where: str) -> list[Epsilon]:
    """``listed`` that the scale's optional ``epsilons`` filter keeps."""
    keep = at_scale.get("epsilons")
    if keep is None:
        return listed
    wanted = {_read_epsilon(value, f"{where}.epsilons[{i}]") for i, value in enumerate(keep)}
    return [eps for eps in listed if eps in wanted]


def _epsilon_params(method_spec: Mapping[str, Any], listed: list[Epsilon],
                    where: str) -> dict[Epsilon, dict[str, Any]]:
    """``epsilon_params`` by epsilon; every key must be one of the ``listed`` epsilons (a typo
    would otherwise silently train with the shared params)."""
    out = {}
    for key, values in (method_spec.get("epsilon_params") or {}).items():
        eps = _read_epsilon(key, f"{where}.epsilon_params.{key}")
        if eps not in listed:
            raise ExperimentConfigError(
                f"{where}.epsilon_params.{key}: not one of this method's epsilons "
                f"{[str(e) for e in sorted(listed)]}")
        out[eps] = dict(values)
    return out


def _tuning(method_spec: Mapping[str, Any], at_scale: Mapping[str, Any],
            params: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The method's tuning block with the scale's overrides (``configs``, ``seeds``), checked."""
    spec = {**method_spec["tuning"], **(at_scale.get("tuning") or {})}
    try:
        tuning = TuningSpec.from_dict(spec, where)
        cell_grid(params, tuning.cell)
        fixed_params(params, tuning)
    except SearchSpaceError as err:
        raise ExperimentConfigError(str(err)) from None
    return spec


def _check_delta(value: Any, where: str) -> float:
    try:
        delta = float(value)
    except (TypeError, ValueError):
        raise ExperimentConfigError(f"{where}: missing or not a number: {value!r}") from None
    if not 0 < delta < 1:
        raise ExperimentConfigError(f"{where}: delta must be in (0, 1), got {value!r}")
    return delta


__all__ = ["ExperimentConfigError", "Job", "expand_jobs", "load_experiments"]
