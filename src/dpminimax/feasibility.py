"""Every job's privacy plan when the workflow builds its DAG (issue 40 item 4).

A job whose plan is infeasible (a parameter its plan refuses, a single step already over the
target on its dataset's size) would otherwise fail when it starts, possibly after hours of other
jobs. :func:`check_jobs` runs each job's :meth:`Method.plan` for every grid point (seeds do not
enter a plan) on the job's training size before any job runs, the very call :meth:`Method.fit`
starts with, so the two cannot disagree. The size is the problem's ``n`` for a synthetic
problem and the prepared data's ``n_train`` for a dataset (:func:`prepared_train_size`); a
dataset not prepared yet, a tuned job (its parameters are chosen by its tuning stage) and a
plan that reads the training data itself (:meth:`Method.plan_reads_data`) are planned at the
job's start, as before.

Plans cost accountant calls (seconds for the default config), so the jobs that planned are
remembered in ``cache`` keyed by the training code's fingerprint and (method, parameters,
epsilon, delta, n): a later dry run or run with the same code re-plans nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from dpminimax.algorithms import expand_runs, get_method
from dpminimax.algorithms.base import shared_groups, shared_values
from dpminimax.atomic import write_json
from dpminimax.data import PreparedDataset
from dpminimax.experiments import ExperimentConfigError, Job


def plan_job(job: Job, n: int | None = None, data: PreparedDataset | None = None) -> int:
    """Plan every grid point of ``job`` on ``n`` training rows (None: the size its method
    draws itself) or, given the prepared ``data``, exactly as :meth:`Method.fit` starts on it
    (:meth:`Method.plan_runs`); raise the plan's error. Returns how many runs were planned."""
    method = get_method(job.method)
    runs = expand_runs(job.seeds[:1], float(job.epsilon), job.delta, dict(job.params))
    planned = 0
    for group in shared_groups(method, runs):
        if data is not None:
            method.plan_runs(data, group)
            planned += len(group)
            continue
        shared = shared_values([method.resolve(run.params) for run in group],
                               method.shared_parameters, method.name)
        if method.plan_reads_data(shared):
            continue
        size = method.sample_size(None, shared) if n is None else n
        for run in group:
            method.plan(run, size)
            planned += 1
    return planned


def prepared_train_size(meta_path: Path, max_rows: int | None, split_seed: int) -> int | None:
    """``n_train`` of a prepared dataset's meta.json, if it was prepared with these row cap and
    split seed (None when it is absent or prepared otherwise: it will be prepared again)."""
    if not meta_path.exists():
        return None
    meta = json.loads(meta_path.read_text())["meta"]
    split = meta.get("split", {})
    if split.get("max_rows") != max_rows or split.get("seed") != split_seed:
        return None
    return int(meta["n_train"])


def check_jobs(jobs: Iterable[Job], train_size: Callable[[str], int | None],
               cache: Path, code: str, source: Callable[[Job], str]) -> int:
    """Plan every job that can be planned now (module docstring); the first infeasible one is
    an :class:`ExperimentConfigError` naming its file (``source(job)``), its key and the job.
    Returns how many jobs were planned (not found in ``cache``, some run planned)."""
    known = _load(cache, code)
    before = set(known)
    planned = 0
    try:
        for job in jobs:
            if job.tuned:
                continue
            draws = get_method(job.method).task.draws_data
            n = None if draws else train_size(job.dataset)
            if n is None and not draws:
                continue
            key = json.dumps([job.method, job.params, str(job.epsilon), job.delta, n],
                             sort_keys=True, default=repr)
            if key in known:
                continue
            try:
                runs = plan_job(job, n)
            except ValueError as err:
                raise ExperimentConfigError(
                    f"{source(job)}: experiments.{job.experiment}.methods.{job.method}: job "
                    f"{job.dataset}/{job.method}/eps~{job.epsilon}"
                    f"{'' if n is None else f' (n_train {n})'} cannot be planned: {err}"
                ) from None
            known.add(key)
            planned += bool(runs)
    finally:
        if known != before:
            cache.parent.mkdir(parents=True, exist_ok=True)
            write_json(cache, {"code": code, "planned": sorted(known)})
    return planned


def _load(cache: Path, code: str) -> set[str]:
    """The keys planned with this training code (none if the cache is of other code)."""
    if not cache.exists():
        return set()
    try:
        stored = json.loads(cache.read_text())
    except json.JSONDecodeError:
        return set()
    return set(stored["planned"]) if stored.get("code") == code else set()
