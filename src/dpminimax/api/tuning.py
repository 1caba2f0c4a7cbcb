"""The tuning stage of :mod:`dpminimax.api` (RaCO-DP App. E.2): phase 1's trials and their
choice of a configuration per cell (phase 2 is :func:`dpminimax.api.train` with a selection)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpminimax.algorithms import get_method
from dpminimax.api.training import code_versions, config_epsilon, plain, run_table, start_job
from dpminimax.atomic import write_json, write_parquet
from dpminimax.data import load_prepared
from dpminimax.tuning import choose_configs
from dpminimax.tuning.protocol import (
    TuningSpec,
    fit_with_selection,
    phase1_runs,
    split_validation,
)


def tune(run_config: Mapping[str, Any], data_dir: str | Path, out_path: str | Path) -> pd.DataFrame:
    """Phase 1 of the tuning protocol (RaCO-DP App. E.2): every sampled configuration x cell x
    phase-1 seed, batched, with the checkpoint rule; one row per trial in ``out_path``.

    The test-set columns are written for inspection only; the choice uses validation accuracy
    and train-set constraint values (:func:`select_configs`). Outside the privacy guarantee.
    """
    config = {**run_config, **code_versions(run_config)}
    data = load_prepared(data_dir)
    method = get_method(config["method"])
    tuning = TuningSpec.from_dict(config["tuning"])
    runs, ids = phase1_runs(tuning, config["params"], config_epsilon(config),
                            float(config["delta"]))
    device = start_job(method, data.name)
    data, x_val, y_val = split_validation(data, tuning.validation_fraction)
    fit, records = fit_with_selection(method, data, runs, device, x_val=x_val, y_val=y_val,
                                      eval_every=tuning.eval_every)
    records = [{"config_id": i, **record} for i, record in zip(ids, records, strict=True)]
    table = run_table(config, method, fit, data, device, records)
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
    cells = [{**{k: plain(v) for k, v in row.items()}, "params": configs[int(row["config_id"])]}
             for row in chosen.to_dict(orient="records")]
    write_json(out_path, {"cells": cells, "search": dict(tuning.search),
                          "configs": len(configs), "phase1_seeds": tuning.seeds,
                          "note": "tuning is outside the privacy guarantee (as in the paper)"})
    return chosen
