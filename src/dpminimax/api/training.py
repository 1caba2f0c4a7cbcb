"""The training side of :mod:`dpminimax.api`: prepare, train, tune, attack, audit.

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
from dpminimax.algorithms.fair.jagielski2019 import LogisticMixture
from dpminimax.api.columns import RUN_COLUMNS
from dpminimax.atomic import atomic_directory, atomic_path, write_json, write_parquet
from dpminimax.attacks import dp_auc_ceiling, dp_tpr_ceiling, loss_threshold_attack
from dpminimax.data import PreparedDataset, load_dataset, load_prepared, save_prepared
from dpminimax.data.inputs import split_inputs
from dpminimax.device import default_device
from dpminimax.experiments import parse_epsilon
from dpminimax.kernels.allocator import retain_freed_memory
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.models.network import BatchedNetwork
from dpminimax.provenance import train_code_fingerprint
from dpminimax.tuning import choose_configs
from dpminimax.tuning.protocol import (
    TuningSpec,
    fit_with_selection,
    phase1_runs,
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
              "out_dir": str(out.resolve()), **_code_versions(run_config)}
    epsilon = parse_epsilon(config["epsilon"])
    device = _start(method, str(config["dataset"]))
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
    table = pd.concat([_run_table(config, method, fit, data, device,
                                  records if selection is not None else [{} for _ in fit.runs])
                       for fit in fits], ignore_index=True)
    with atomic_directory(out) as tmp:  # all four files are new, or none is
        write_parquet(table, tmp / "metrics.parquet")
        write_json(tmp / "accounting.json", {
            "runs": [{"run_id": run.run_id, **acc} for fit in fits
                     for run, acc in zip(fit.runs, fit.accounting, strict=True)]
        })
        saved = [{"model": _model_record(fit.model),
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


def tune(run_config: Mapping[str, Any], data_dir: str | Path, out_path: str | Path) -> pd.DataFrame:
    """Phase 1 of the tuning protocol (RaCO-DP App. E.2): every sampled configuration x cell x
    phase-1 seed, batched, with the checkpoint rule; one row per trial in ``out_path``.

    The test-set columns are written for inspection only; the choice uses validation accuracy
    and train-set constraint values (:func:`select_configs`). Outside the privacy guarantee.
    """
    config = {**run_config, **_code_versions(run_config)}
    data = load_prepared(data_dir)
    method = get_method(config["method"])
    tuning = TuningSpec.from_dict(config["tuning"])
    runs, ids = phase1_runs(tuning, config["params"], parse_epsilon(config["epsilon"]),
                            float(config["delta"]))
    device = _start(method, data.name)
    data, x_val, y_val = split_validation(data, tuning.validation_fraction)
    fit, records = fit_with_selection(method, data, runs, device, x_val=x_val, y_val=y_val,
                                      eval_every=tuning.eval_every)
    records = [{"config_id": i, **record} for i, record in zip(ids, records, strict=True)]
    table = _run_table(config, method, fit, data, device, records)
    write_parquet(table, out_path)
    return table


def select_configs(run_config: Mapping[str, Any], trials_path: str | Path,
                   out_path: str | Path) -> pd.DataFrame:
    """Phase 1's choice: the configuration of every cell (``selected.json``: one entry per cell
    with its parameters, mean validation accuracy and feasibility)."""
    tuning = TuningSpec.from_dict(run_config["tuning"])
    trials = pd.read_parquet(trials_path)
    cell_columns = [f"p_{name}" for name in tuning.cell]
    chosen = choose_configs(trials, cell_columns).rename(
        columns=dict(zip(cell_columns, tuning.cell, strict=True)))
    configs = tuning.config_list()
    cells = [{**{k: _plain(v) for k, v in row.items()}, "params": configs[int(row["config_id"])]}
             for row in chosen.to_dict(orient="records")]
    write_json(out_path, {"cells": cells, "search": dict(tuning.search),
                          "configs": len(configs), "phase1_seeds": tuning.seeds,
                          "note": "tuning is outside the privacy guarantee (as in the paper)"})
    return chosen


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


def _start(method, dataset: str) -> torch.device:
    device = default_device()
    retain_freed_memory()
    torch.manual_seed(0)
    log.info("training %s on %s (device %s)", method.name, dataset, device)
    return device


def _code_versions(run_config: Mapping[str, Any]) -> dict[str, str]:
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


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars (for JSON)."""
    return value.item() if hasattr(value, "item") else value


def _run_table(config: Mapping[str, Any], method, fit, data: PreparedDataset | None,
               device: torch.device, records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run: identity, resolved parameters, the metrics of the method's task,
    selection records, privacy and provenance."""
    metrics = method.task.evaluate(method, fit, data, device)
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


def attack(train_dir: str | Path, data_dir: str | Path, out_path: str | Path) -> pd.DataFrame:
    """Loss-threshold membership inference (Yeom et al. 2018) on every run of a training job.

    Members are the training rows, non-members the held-out test rows (same distribution); the
    larger side is subsampled so both have equal size. Beside each attack, the ceiling that the
    run's (epsilon, delta) implies for *any* attack (TPR <= e^eps FPR + delta) is recorded.
    """
    train_dir = Path(train_dir)
    data = load_prepared(data_dir)
    metrics = pd.read_parquet(train_dir / "metrics.parquet")
    task = get_method(str(metrics["method"].iloc[0])).task
    if not task.attacked:
        raise ValueError(f"{train_dir}: its method's task {task.name!r} is not attacked "
                         "(membership inference needs a member set and held-out rows)")
    model, state, run_ids = _load_model(train_dir / "model.pt")
    cpu = torch.device("cpu")
    member = model.losses(state, split_inputs(data, "train", cpu), torch.as_tensor(data.y_train))
    nonmember = model.losses(state, split_inputs(data, "test", cpu), torch.as_tensor(data.y_test))
    rows = []
    for r, run_id in enumerate(run_ids):
        info = metrics.loc[metrics["run_id"] == run_id].iloc[0]
        result = loss_threshold_attack(member[r].numpy(), nonmember[r].numpy(), seed=int(r))
        eps, delta = float(info["epsilon_spent"]), float(info["delta"])
        rows.append({
            **{c: info[c] for c in RUN_COLUMNS},
            **result,
            "ceiling_auc": dp_auc_ceiling(eps, delta),
            "ceiling_tpr_at_1pct_fpr": float(dp_tpr_ceiling(0.01, eps, delta)),
        })
    table = pd.DataFrame(rows)
    write_parquet(table, out_path)
    return table


def lira(settings: Mapping[str, Any], data_dir: str | Path, epsilon: str | float,
         metrics_out: str | Path, roc_out: str | Path) -> pd.DataFrame:
    """The paper's LiRA attack (``lira:`` in its experiments.yaml; issue #23) at ``epsilon``:
    every listed method that trains at it, its shadow models as one batched program
    (:mod:`dpminimax.attacks.shadows`); writes the attacks' metrics and ROC curves."""
    from dpminimax.attacks.shadows import lira_tables

    data = load_prepared(data_dir)
    metrics, roc = lira_tables(settings, data, float(epsilon), default_device())
    table = pd.DataFrame(metrics)
    write_parquet(table, metrics_out)
    write_parquet(pd.DataFrame(roc), roc_out)
    return table


def audit(settings: Mapping[str, Any], data_dir: str | Path, csv_out: str | Path,
          figure_out: Sequence[str | Path]) -> pd.DataFrame:
    """The paper's one-run privacy audit (``audit:`` in its experiments.yaml; issues #18, #42):
    every listed private method and its planted-bug controls, then each release of its plan
    alone (column ``release``), their eps_lower beside the claimed epsilon, as a table and a
    figure. Raises if a real method's or release's eps_lower exceeds its claim (a mechanism is
    broken); a gross control the audit misses is a warning (the audit lacks power there,
    column ``detected``); a near-claim control (noise / 2, noise / 4) missed is the audit's
    measured power, reported in the table only."""
    from dpminimax.attacks.canaries import GROSS_BUGS, audit_table
    from dpminimax.report.audit import draw_audit

    data = load_prepared(data_dir)
    table = pd.DataFrame(audit_table(settings, data, default_device()))
    with atomic_path(csv_out) as tmp:
        table.to_csv(tmp, index=False)
    draw_audit(table, figure_out)
    real, controls = table[table["bug"] == "none"], table[table["bug"] != "none"]
    missed = controls[~controls["detected"] & controls["bug"].isin(GROSS_BUGS)]
    if len(missed):
        log.warning("the audit did not detect planted bug(s) %s (table: %s)",
                    (missed["method"] + ":" + missed["bug"]).tolist(), csv_out)
    violated = [method if release == "all" else f"{method}: {release}" for method, release
                in real.loc[real["detected"], ["method", "release"]].itertuples(index=False)]
    if violated:
        raise RuntimeError(
            f"privacy audit: eps_lower above the claimed epsilon for "
            f"{violated} at {int(real['confidence'].iloc[0] * 100)}% "
            f"confidence: the mechanism does not have the epsilon it accounts (table: {csv_out})")
    return table


def leak(settings: Mapping[str, Any], csv_out: str | Path, figure_out: Sequence[str | Path],
         claims_out: str | Path) -> pd.DataFrame:
    """The DP bilevel paper's Section 3 leak attack (``leak:`` in its experiments.yaml) on Example
    3.1 at each of its (d, n) settings (:func:`dpminimax.attacks.bilevel_leak.leak_settings`): AUC,
    empirical epsilon and reconstruction error of M0-M3
    (:func:`dpminimax.attacks.bilevel_leak.leak_study`; one row per setting x mechanism x epsilon)
    as one table and one figure (a row of panels per setting), and the values its claims read, per
    setting (``{"claims": {id_d<d>_n<n>: value}}``, like a paper benchmark's)."""
    from dpminimax.attacks.bilevel_leak import leak_settings, leak_study
    from dpminimax.report.bilevel_leak import draw_leak, leak_claims

    table = pd.DataFrame(leak_study(settings))
    with atomic_path(csv_out) as tmp:
        table.to_csv(tmp, index=False)
    draw_leak(table, figure_out)
    write_json(claims_out, {"claims": leak_claims(table), "settings": dict(settings),
                            "resolved": leak_settings(settings)})
    return table


def _identity(config: Mapping[str, Any], run) -> dict[str, Any]:
    """Run-table identity columns (``paper``/``experiment`` only where the config has them:
    :func:`dpminimax.estimator.fit` trains outside any paper)."""
    return {
        **{key: config[key] for key in ("paper", "experiment") if key in config},
        "dataset": config["dataset"], "method": config["method"],
        "epsilon": run.epsilon, "delta": run.delta, "seed": run.seed, "run_id": run.run_id,
    }


#: Saved model name -> its class (a dataclass rebuilt from its saved fields).
SAVED_MODELS = {cls.name: cls for cls in (BatchedLogisticRegression, LogisticMixture,
                                          BatchedNetwork)}


def _model_record(model) -> dict[str, Any]:
    """What ``model.pt`` says of the trained model: a saved model's name and the fields that
    rebuild it; a synthetic problem's class name (the run config names its instance)."""
    if dataclasses.is_dataclass(model):
        return {"name": model.name, **_plain_fields(model)}
    return {"name": type(model).__name__}


def _plain_fields(model) -> dict[str, Any]:
    """The dataclass fields that rebuild ``model`` (tuples as lists, for ``weights_only``)."""
    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(model).items()}


def _load_model(path: Path):
    saved = torch.load(path, map_location="cpu", weights_only=True)
    spec = saved["model"]
    if spec["name"] not in SAVED_MODELS:
        raise ValueError(f"{path}: unknown model {spec['name']!r}; known: {sorted(SAVED_MODELS)}")
    model = SAVED_MODELS[spec["name"]](**{k: v for k, v in spec.items() if k != "name"})
    return model, saved["state"], saved["run_ids"]
