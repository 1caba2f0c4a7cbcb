"""Phase 1 and phase 2 of the tuning protocol (RaCO-DP App. E.2), batched.

* Phase 1: ``configs`` configurations drawn from the search space, each trained for every cell
  value (e.g. every target gamma) and ``seeds`` seeds; all of them train as ONE batched program
  per value of the method's shared parameters (those fixing the sampling rate and step count),
  with the checkpoint rule applied to every run. :func:`choose_configs` then keeps one
  configuration per cell.
* Phase 2: the chosen configuration of every cell, retrained with the experiment's (fresh)
  seeds, again with the checkpoint rule; these are the reported runs.

Validation data: the paper's code holds out one of 8 cross-validation folds of the training
portion (the paper gives no splits); we hold out one fixed fold (``validation_fraction`` of the
training split, drawn with a fixed seed) and train on the rest, so every epsilon is over the
rows actually trained on. The z-scoring statistics of the prepared data were computed on the
whole training split (a public-preprocessing simplification, as in the paper's code).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from dpminimax.algorithms.base import FitResult, Method, RunSpec
from dpminimax.data import PreparedDataset
from dpminimax.tuning.checkpoint import CheckpointSelector
from dpminimax.tuning.search import SearchSpaceError, sample_configs, validate_search_space

#: Seeds of phase-1 trials start here, so they never coincide with the reported (phase-2) seeds.
PHASE1_SEED_OFFSET = 10_000


@dataclass(frozen=True)
class TuningSpec:
    """The ``tuning`` block of a method in experiments.yaml, at one scale."""

    search: Mapping[str, Any]
    cell: tuple[str, ...]
    configs: int
    seeds: int
    eval_every: int = 25
    validation_fraction: float = 0.125
    seed: int = 0

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any], where: str = "tuning") -> TuningSpec:
        known = {"search", "cell", "configs", "seeds", "eval_every", "validation_fraction",
                 "seed"}
        unknown = sorted(set(spec) - known)
        if unknown:
            raise SearchSpaceError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
        for key in ("search", "configs", "seeds"):
            if key not in spec:
                raise SearchSpaceError(f"{where}: missing {key!r}")
        validate_search_space(spec["search"], f"{where}.search")
        tuning = cls(search=dict(spec["search"]), cell=tuple(spec.get("cell", ())),
                     configs=int(spec["configs"]), seeds=int(spec["seeds"]),
                     eval_every=int(spec.get("eval_every", 25)),
                     validation_fraction=float(spec.get("validation_fraction", 0.125)),
                     seed=int(spec.get("seed", 0)))
        if not 0 < tuning.validation_fraction < 1:
            raise SearchSpaceError(f"{where}.validation_fraction: must be in (0, 1)")
        if tuning.configs < 1 or tuning.seeds < 1:
            raise SearchSpaceError(f"{where}: configs and seeds must be >= 1")
        overlap = sorted(set(tuning.cell) & set(tuning.search))
        if overlap:
            raise SearchSpaceError(f"{where}: {overlap} cannot be both a cell and searched")
        return tuning

    def config_list(self) -> list[dict[str, Any]]:
        """The phase-1 configurations (deterministic in ``seed``)."""
        return sample_configs(self.search, self.configs, self.seed)


def split_validation(data: PreparedDataset, fraction: float,
                     seed: int = 0) -> tuple[PreparedDataset, np.ndarray, np.ndarray]:
    """``(data without the validation rows, x_val, y_val)``: a fixed random ``fraction`` of the
    training split is held out (same rows for every run, epsilon and configuration)."""
    n = len(data.y_train)
    order = np.random.default_rng(seed).permutation(n)
    n_val = max(1, int(round(fraction * n)))
    val, fit = np.sort(order[:n_val]), np.sort(order[n_val:])
    fit_data = replace(data, x_train=data.x_train[fit], y_train=data.y_train[fit],
                       s_train=data.s_train[fit],
                       meta={**data.meta, "n_train": len(fit), "n_validation": n_val})
    return fit_data, data.x_train[val], data.y_train[val]


def cell_grid(params: Mapping[str, Any], cell: Sequence[str]) -> list[dict[str, Any]]:
    """Every combination of the cell parameters' listed values (``gamma: [...]`` -> cells)."""
    missing = [name for name in cell if name not in params]
    if missing:
        raise SearchSpaceError(f"tuning.cell: {missing} not among the method's params")
    values = [params[name] if isinstance(params[name], list) else [params[name]]
              for name in cell]
    return [dict(zip(cell, combo, strict=True)) for combo in itertools.product(*values)]


def fixed_params(params: Mapping[str, Any], tuning: TuningSpec) -> dict[str, Any]:
    """The experiment's params that are neither searched nor a cell (they stay fixed)."""
    fixed = {k: v for k, v in params.items() if k not in tuning.search and k not in tuning.cell}
    listed = sorted(k for k, v in fixed.items() if isinstance(v, list))
    if listed:
        raise SearchSpaceError(f"tuning: params {listed} are lists but neither searched nor a "
                               f"cell; list them under tuning.cell or tuning.search")
    return fixed


def phase1_runs(tuning: TuningSpec, params: Mapping[str, Any], epsilon: float,
                delta: float) -> tuple[list[RunSpec], list[int]]:
    """Every (configuration, cell, phase-1 seed) run and the configuration id of each."""
    fixed = fixed_params(params, tuning)
    runs, ids = [], []
    for config_id, config in enumerate(tuning.config_list()):
        for cell in cell_grid(params, tuning.cell):
            for seed in range(tuning.seeds):
                runs.append(RunSpec(seed=PHASE1_SEED_OFFSET + seed, epsilon=epsilon,
                                    delta=delta, params={**fixed, **config, **cell}))
                ids.append(config_id)
    return runs, ids


def phase2_runs(tuning: TuningSpec, params: Mapping[str, Any], chosen: Sequence[Mapping],
                seeds: Sequence[int], epsilon: float,
                delta: float) -> tuple[list[RunSpec], list[int]]:
    """The chosen configuration of every cell (rows of :func:`choose_configs` with the
    configuration's ``params``), trained with the reported ``seeds``."""
    fixed = fixed_params(params, tuning)
    runs, ids = [], []
    for row in chosen:
        cell = {name: row[name] for name in tuning.cell}
        for seed in seeds:
            runs.append(RunSpec(seed=int(seed), epsilon=epsilon, delta=delta,
                                params={**fixed, **row["params"], **cell}))
            ids.append(int(row["config_id"]))
    return runs, ids


def fit_with_selection(method: Method, data: PreparedDataset, runs: Sequence[RunSpec],
                       device: torch.device, *, x_val: np.ndarray, y_val: np.ndarray,
                       eval_every: int) -> tuple[FitResult, list[dict[str, Any]]]:
    """Fit ``runs`` with the checkpoint rule; returns the selected states (in the order of
    ``runs``) and the selection record of every run.

    One batched program per value of the method's shared parameters and of the batch size: runs
    of different batch sizes could share a program, but every batch is padded to the largest,
    which wasted ~40% of phase 1's time on the paper's range B in [256, 1256]."""
    pieces = []
    for indices in program_groups(method, runs):
        group = [runs[i] for i in indices]
        selector = checkpoint_selector(method, data, group, device, x_val=x_val, y_val=y_val,
                                       eval_every=eval_every)
        fit = method.fit(data, group, device, monitor=selector)
        steps = [int(p["steps"]) for p in fit.resolved_params]
        state, records = selector.select(max(steps), fit.model, fit.state)
        for record, run_steps in zip(records, steps, strict=True):
            # a run that finished early was frozen: its later evaluations saw its last iterate
            record["selected_step"] = min(record["selected_step"], run_steps)
        pieces.append((indices, replace(fit, state=state), records))
    return _concatenate(pieces, len(runs))


def program_groups(method: Method, runs: Sequence[RunSpec]) -> list[list[int]]:
    """Indices of ``runs`` per batched program: one per value of the method's shared
    parameters and of the batch size (see :func:`fit_with_selection`)."""
    groups: dict[str, list[int]] = {}
    for index, run in enumerate(runs):
        resolved = method.resolve(run.params)
        key = repr([resolved.get(name) for name in (*method.shared_parameters, "batch_size")])
        groups.setdefault(key, []).append(index)
    return list(groups.values())


def checkpoint_selector(method: Method, data: PreparedDataset, runs: Sequence[RunSpec],
                        device: torch.device, *, x_val: np.ndarray, y_val: np.ndarray,
                        eval_every: int) -> CheckpointSelector:
    """The checkpoint rule's monitor for one batched program of ``runs``."""
    return CheckpointSelector(torch.as_tensor(data.x_train, device=device),
                              torch.as_tensor(x_val, device=device),
                              torch.as_tensor(y_val, device=device),
                              method.training_violation(
                                  [method.resolve(run.params) for run in runs], data, device),
                              eval_every)


def _concatenate(pieces, total: int) -> tuple[FitResult, list[dict[str, Any]]]:
    order = [i for indices, _, _ in pieces for i in indices]
    position = np.argsort(order)
    fits = [fit for _, fit, _ in pieces]
    model = fits[0].model
    if any(fit.model != model for fit in fits):
        raise ValueError("runs of one tuning job produced different model shapes")
    state = {key: torch.cat([fit.state[key] for fit in fits])[torch.as_tensor(position)]
             for key in fits[0].state}

    def gather(items):
        flat = [item for piece in items for item in piece]
        return [flat[p] for p in position]

    fit = FitResult(model=model, state=state, runs=gather(f.runs for f in fits),
                    accounting=gather(f.accounting for f in fits), method=fits[0].method,
                    resolved_params=gather(f.resolved_params for f in fits))
    assert len(fit.runs) == total
    return fit, gather(records for _, _, records in pieces)
