"""The training stage of :mod:`dpminimax.api`: prepare a dataset, train a job's runs (one batched
program per value of the method's shared parameters), refuse non-finite results and write the
run table.

Hyper-parameters travel in a *run config* (a dict that is also written to ``run_config.json``
beside the results it produced).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from dpminimax.algorithms import expand_runs, get_method
from dpminimax.algorithms.base import shared_groups
from dpminimax.api.model_io import model_record
from dpminimax.atomic import atomic_directory, write_json, write_parquet
from dpminimax.data import PreparedDataset, load_dataset, load_prepared, save_prepared
from dpminimax.device import default_device
from dpminimax.epsilon import Epsilon
from dpminimax.kernels.allocator import retain_freed_memory
from dpminimax.provenance import train_code_fingerprint
from dpminimax.tuning.protocol import (
    TuningSpec,
    fit_with_selection,
    phase2_runs,
    split_validation,
)

log = logging.getLogger("dpminimax")


def set_threads(threads: int) -> None:
    """Limit torch's intra-op threads to what the scheduler gave this job."""
    torch.set_num_threads(max(1, int(threads)))


def prepare_dataset(
    name: str, out_dir: str | Path, *, max_rows: int | None = None, split_seed: int = 100,
    missing_data: str = "fail",
) -> PreparedDataset:
    """Locate, verify, preprocess and split dataset ``name``; write arrays.npz + meta.json.
    ``missing_data="standin"`` replaces data that is neither local nor downloadable by a marked
    synthetic stand-in (:mod:`dpminimax.data.standin`)."""
    dataset = load_dataset(name, max_rows=max_rows, split_seed=split_seed,
                           missing_data=missing_data)
    save_prepared(dataset, out_dir)
    log.info("prepared %s: %s", name, {k: dataset.meta[k] for k in ("n_train", "n_test")})
    if dataset.meta.get("standin"):
        log.warning("%s: %s (%s)", name, dataset.meta["standin_note"],
                    dataset.meta["standin_reason"])
    return dataset


def config_epsilon(run_config: Mapping[str, Any]) -> float:
    """The job's epsilon, read from its run config's label (``"1"``, ``"inf"``)."""
    return float(Epsilon.parse(run_config["epsilon"], "run_config.json: epsilon"))


def train(run_config: Mapping[str, Any], data_dir: str | Path | None, out_dir: str | Path,
          selection: str | Path | None = None) -> pd.DataFrame:
    """Train every seed x grid point of one (experiment, dataset, method, epsilon) as one program
    per value of the method's shared parameters (:func:`fit_by_shared`).

    ``data_dir`` is the prepared dataset, or None for a method whose task draws its own data (a
    synthetic problem). With ``selection`` (the ``selected.json`` of :func:`select_configs`)
    this is phase 2 of the tuning protocol: the configuration chosen for every cell, trained
    with the job's seeds and the checkpoint rule (see :mod:`dpminimax.tuning`). Writes
    ``metrics.parquet`` (one row per run), ``accounting.json`` (epsilon, delta, accountant,
    neighbouring relation and DpEvent of every run), ``model.pt`` (the batched state) and
    ``run_config.json`` (everything needed to replay the job with ``dpminimax rerun``).
    """
    out = Path(out_dir)
    method = get_method(run_config["method"])
    data = _job_data(method, data_dir)
    config = {**run_config, **({} if data_dir is None else
                               {"data_dir": str(Path(data_dir).resolve())}),
              "out_dir": str(out.resolve()), **code_versions(run_config)}
    epsilon = config_epsilon(config)
    device = start_job(method, str(config["dataset"]))
    if selection is None:
        runs = expand_runs(config["seeds"], epsilon, float(config["delta"]),
                           config.get("params", {}))
        fits = fit_by_shared(method, data, runs, device)
    else:
        config["selection"] = str(Path(selection).resolve())
        tuning = TuningSpec.from_dict(config["tuning"])
        chosen = json.loads(Path(selection).read_text())["cells"]
        runs, ids = phase2_runs(tuning, config["params"], chosen, config["seeds"], epsilon,
                                float(config["delta"]))
        data, x_val, y_val = split_validation(data, tuning.validation_fraction)
        fit, records = fit_with_selection(method, data, runs, device, x_val=x_val, y_val=y_val,
                                          eval_every=tuning.eval_every)
        records = [{"config_id": i, **record} for i, record in zip(ids, records, strict=True)]
        fits = [fit]
    for fit in fits:
        require_finite(fit, method.name)
    table = pd.concat([run_table(config, method, fit, data, device,
                                  records if selection is not None else [{} for _ in fit.runs])
                       for fit in fits], ignore_index=True)
    with atomic_directory(out) as tmp:  # all four files are new, or none is
        write_parquet(table, tmp / "metrics.parquet")
        write_json(tmp / "accounting.json", {
            "runs": [{"run_id": run.run_id, **acc} for fit in fits
                     for run, acc in zip(fit.runs, fit.accounting, strict=True)]
        })
        saved = [{"model": model_record(fit.model),
                  "state": {k: v.cpu() for k, v in fit.state.items()},
                  "run_ids": [run.run_id for run in fit.runs]} for fit in fits]
        torch.save(saved[0] if len(saved) == 1 else {"fits": saved}, tmp / "model.pt")
        write_json(tmp / "run_config.json", config)
    return table


def fit_by_shared(method, data: PreparedDataset | None, runs: Sequence,
                  device: torch.device) -> list:
    """``method.fit`` of ``runs`` as one batched program per group of
    :func:`~dpminimax.algorithms.base.shared_groups`, each with the workflow's finite guard:
    one :class:`FitResult` of every run where the groups train the same model with states of
    one shape; else, for a method whose task draws its own data (a synthetic problem whose
    instance depends on a swept parameter: its dimension d, P3's tau = n^p), the groups' own
    results, each evaluated on its own problem."""
    fits = [method.fit(data, group, device, monitor=finite_guard(method.name, group))
            for group in shared_groups(method, runs)]
    first = fits[0]
    if len(fits) == 1:
        return fits
    if any(fit.model != first.model or fit.state.keys() != first.state.keys()
           or any(fit.state[k].shape[1:] != first.state[k].shape[1:] for k in fit.state)
           for fit in fits):
        if method.task.draws_data and not method.task.attacked:
            return fits
        raise ValueError(f"method {method.name!r}: the job's grid points with different "
                         f"{list(method.shared_parameters)} train different models; put them "
                         "in separate jobs (methods or experiments)")
    per_run = {f.name: [item for fit in fits for item in getattr(fit, f.name)]
               for f in dataclasses.fields(first) if isinstance(getattr(first, f.name), list)}
    return [dataclasses.replace(
        first, state={k: torch.cat([fit.state[k] for fit in fits]) for k in first.state},
        **per_run)]


def _job_data(method, data_dir: str | Path | None) -> PreparedDataset | None:
    """The job's prepared dataset; None for a method whose task draws its own data (a
    dataset given to one, or none given to a method that needs one, is an error)."""
    if method.task.draws_data:
        if data_dir is not None:
            raise ValueError(f"method {method.name!r} draws its own data (task "
                             f"{method.task.name!r}); it takes no prepared dataset")
        return None
    if data_dir is None:
        raise ValueError(f"method {method.name!r} trains on a prepared dataset: pass its "
                         "directory (dpminimax prepare writes one)")
    return load_prepared(data_dir)


class NonFiniteResultError(RuntimeError):
    """A trained run holds NaN or infinite values: it is an error, never a result."""


def finite_guard(method: str, runs):
    """A training monitor that stops at the first step after which a run's state is not finite
    (:class:`NonFiniteResultError` naming the run, the state entry and the step)."""
    def check(step: int, model, state: Mapping[str, torch.Tensor]) -> None:
        _require_finite_state(state, runs, method, f"after step {step}")
    return check


def require_finite(fit, method: str) -> None:
    """Raise :class:`NonFiniteResultError` naming the first run (and state entry) of ``fit``
    that is not finite: a diverged step size or a non-finite hyper-parameter."""
    _require_finite_state(fit.state, fit.runs, method, "after training")


def _require_finite_state(state: Mapping[str, torch.Tensor], runs, method: str,
                          when: str) -> None:
    floats = {k: v for k, v in state.items() if torch.is_floating_point(v)}
    if all(bool(torch.isfinite(v).all()) for v in floats.values()):
        return
    for key, value in floats.items():
        finite = torch.isfinite(value.reshape(value.shape[0], -1)).all(dim=1)
        if not bool(finite.all()):
            r = int((~finite).nonzero()[0])
            raise NonFiniteResultError(
                f"method {method!r}, run {runs[r].run_id}: {key} is not finite {when} "
                f"({int((~finite).sum())} of {len(runs)} runs); check the step sizes and "
                "hyper-parameters (a diverging lr). No result was written.")


def start_job(method, dataset: str) -> torch.device:
    """The job's device, its freed memory kept for reuse and torch's global seed at 0
    (logged)."""
    device = default_device()
    retain_freed_memory()
    torch.manual_seed(0)
    log.info("training %s on %s (device %s)", method.name, dataset, device)
    return device


def code_versions(run_config: Mapping[str, Any]) -> dict[str, str]:
    """``code_version``: the fingerprint of the code running now (what the results come from);
    a different recorded one (a replayed job, an edited config) is kept beside it as
    ``recorded_code_version``, with a warning."""
    running = train_code_fingerprint()
    recorded = run_config.get("code_version")
    if recorded is None or recorded == running:
        return {"code_version": running}
    log.warning("run config was recorded with code %s; this code is %s: the results may "
                "differ from the recorded ones", recorded, running)
    return {"code_version": running, "recorded_code_version": str(recorded)}


def plain(value: Any) -> Any:
    """numpy scalars -> Python scalars (for JSON)."""
    return value.item() if hasattr(value, "item") else value


def run_table(config: Mapping[str, Any], method, fit, data: PreparedDataset | None,
               device: torch.device, records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run: identity, resolved parameters, the metrics of the method's task,
    selection records, privacy and provenance."""
    metrics = method.task.evaluate(fit, data, device)
    rows = []
    for r, run in enumerate(fit.runs):
        rows.append({
            **_identity(config, run),
            **{f"p_{k}": v for k, v in fit.resolved_params[r].items()},
            **metrics[r],
            **records[r],
            "data_standin": data is not None and bool(data.meta.get("standin", False)),
            "accountant": fit.accounting[r]["accountant"],
            "epsilon_spent": fit.accounting[r]["epsilon"],
            "guarantee_covered": bool(fit.accounting[r]["guarantee_covered"]),
            # a noiseless control's run ("noise_off"): its epsilon_spent is inf, what it was
            # planned at is epsilon_planned
            "control": fit.accounting[r].get("control", "none"),
            "epsilon_planned": fit.accounting[r].get("planned_epsilon",
                                                     fit.accounting[r]["epsilon"]),
            **{key: fit.accounting[r][key] for key in ("epsilon_paper_accounting",
                                                      "epsilon_without_amplification")
               if key in fit.accounting[r]},
            "code_version": config.get("code_version") or train_code_fingerprint(),
        })
    return pd.DataFrame(rows)


def _identity(config: Mapping[str, Any], run) -> dict[str, Any]:
    """Run-table identity columns (``paper``/``experiment`` only where the config has them:
    :func:`dpminimax.estimator.fit` trains outside any paper)."""
    return {
        **{key: config[key] for key in ("paper", "experiment") if key in config},
        "dataset": config["dataset"], "method": config["method"],
        "epsilon": run.epsilon, "delta": run.delta, "seed": run.seed, "run_id": run.run_id,
    }
