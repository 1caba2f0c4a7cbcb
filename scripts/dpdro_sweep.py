"""Issue #37's one-factor sweeps of a DP-DRO job (the weight cap, the clip, the estimator, the
lambda step): variant run configs from one job's, and their results as one table.

    python scripts/dpdro_sweep.py configs BASE_RUN_CONFIG OUT_DIR NAME:KEY=VALUE[,KEY=VALUE] ...
    dpminimax train --data DATA --out OUT_DIR/NAME OUT_DIR/NAME.json      (each variant)
    python scripts/dpdro_sweep.py table OUT.csv COLUMN[,COLUMN] RUN_DIR [RUN_DIR ...]
    python scripts/dpdro_sweep.py temperature OUT.csv T[,T] COLUMN[,COLUMN]|- RUN_DIR [...]

``configs`` writes ``OUT_DIR/NAME.json``: the base run config with its ``params`` updated
(values read as numbers, else as YAML: ``1e6``, ``momentum``), experiment ``sweep`` and its
own ``out_dir``.
``table`` merges ``table3_accuracy`` and ``table3_objective`` split by the ``p_*`` columns
named (e.g. ``p_weight_cap``), with the final and the method's lambda beside Phi's (the lambda
minimising Psi at the final x) where the method learns one.
``temperature`` re-releases each job's saved models at output temperatures T (logits / T:
post-processing, so a run trained at any T has the same iterates) and gives the same table
split by ``p_temperature`` and the columns named (``-``: none), Phi final and Phi(init)
evaluated at each T by the curves' code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import torch
import yaml

from dpminimax.api.model_io import load_model
from dpminimax.data import load_prepared
from dpminimax.metrics.imbalanced import CurveRecorder, reference_objectives
from dpminimax.report.dro.tables import table3_accuracy, table3_objective

CPU = torch.device("cpu")


def variant(spec: str) -> tuple[str, dict]:
    """``NAME:KEY=VALUE,KEY=VALUE`` -> (NAME, {KEY: VALUE})."""
    name, _, assignments = spec.partition(":")
    if not name or not assignments:
        sys.exit(f"variant {spec!r}: write NAME:KEY=VALUE[,KEY=VALUE]")
    pairs = (item.split("=", 1) for item in assignments.split(","))
    return name, {key: parse_value(value) for key, value in pairs}


def parse_value(text: str):
    """A number where ``text`` is one (``1e6``, which YAML 1.1 reads as a string), else YAML."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return yaml.safe_load(text)


def configs(base: str, out_dir: str, *specs: str) -> None:
    config = json.loads(Path(base).read_text())
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for name, params in map(variant, specs):
        path = out / f"{name}.json"
        path.write_text(json.dumps({**config, "experiment": "sweep", "out_dir": str(out / name),
                                    "params": {**config["params"], **params}}, indent=2))
        print(path)


def final_lambdas(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per cell, the means over seeds of the last curve point's method lambda and Phi's."""
    last = [json.loads(curve)[-1] for curve in runs["curve"]]
    lambdas = runs[keys].assign(lam_method=[p.get("lambda") for p in last],
                                lam_phi=[p.get("dro_lambda") for p in last])
    return lambdas.groupby(keys, dropna=False).mean().reset_index()


def released_at(run_dir: Path, temperatures: list[float]) -> pd.DataFrame:
    """The job's metric rows once per T, its runs' saved models released at T (their logits
    times T0 / T, T0 the temperature they were saved at): ``dro_objective`` and the curve's
    last point from :class:`CurveRecorder`, ``trivial_dro_objective`` the initial model
    released at T (:func:`reference_objectives`)."""
    rows = pd.read_parquet(run_dir / "metrics.parquet")
    config = json.loads((run_dir / "run_config.json").read_text())
    data = load_prepared(config["data_dir"])
    model, state, run_ids = load_model(run_dir / "model.pt")
    first = rows.iloc[0]
    phi = {"rows": int(first["p_curve_rows"]), "lam0": float(first["p_lam0"]),
           "rho": float(first["p_rho"])}
    saved_at = float(config["params"].get("temperature", 1.0))
    seeds = rows.set_index("run_id").loc[run_ids, "seed"].astype(int).tolist()
    recorder = CurveRecorder(model, data, CPU, every=1, steps=0, runs=len(run_ids), **phi)
    last = [json.loads(curve)[-1] for curve in rows["curve"]]
    tables = []
    for temperature in temperatures:
        scale = torch.full((len(run_ids),), saved_at / temperature)
        points = dict(zip(run_ids, recorder.points(0, model.scale_logits(state, scale), {}),
                          strict=True))
        initial, _ = reference_objectives(model, data, CPU, seeds, **phi,
                                          output_scale=torch.full((len(seeds),), 1 / temperature))
        start = dict(zip(run_ids, initial.tolist(), strict=True))
        tables.append(rows.assign(
            p_temperature=temperature,
            dro_objective=[points[r]["dro_objective"] for r in rows["run_id"]],
            trivial_dro_objective=[start[r] for r in rows["run_id"]],
            curve=[json.dumps([{**points[r], "lambda": point.get("lambda")}])
                   for r, point in zip(rows["run_id"], last, strict=True)]))
    return pd.concat(tables, ignore_index=True)


def temperature(out: str, temperatures: str, columns: str, *run_dirs: str) -> None:
    runs = pd.concat([released_at(Path(d), [float(t) for t in temperatures.split(",")])
                      for d in run_dirs], ignore_index=True)
    write_table(out, runs, ("p_temperature", *([] if columns == "-" else columns.split(","))))


def table(out: str, columns: str, *run_dirs: str) -> None:
    runs = pd.concat([pd.read_parquet(Path(d) / "metrics.parquet") for d in run_dirs],
                     ignore_index=True)
    write_table(out, runs, tuple(columns.split(",")))


def write_table(out: str, runs: pd.DataFrame, by: tuple[str, ...]) -> None:
    keys = ["dataset", "method", "epsilon", *by]
    result = (table3_accuracy(runs, by)
              .merge(table3_objective(runs, by), on=[*keys, "label", "n_seeds", "data_standin"])
              .merge(final_lambdas(runs, keys), on=keys))
    result.to_csv(out, index=False)
    print(result.drop(columns=["label", "data_standin"]).to_string(index=False))


if __name__ == "__main__":
    commands = {"configs": (configs, 4), "table": (table, 4), "temperature": (temperature, 5)}
    if len(sys.argv) < 2 or sys.argv[1] not in commands or len(sys.argv) < commands[sys.argv[1]][1]:
        sys.exit(__doc__)
    commands[sys.argv[1]][0](*sys.argv[2:])
