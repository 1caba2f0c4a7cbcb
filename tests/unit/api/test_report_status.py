"""The status page of ``snakemake --report`` (:func:`dpminimax.api.report_status`): each
output is missing, stale (and why) or ok, and only what exists with its report inputs is
reported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from dpminimax.api import report_status

CODE = "1111111111111111"


@pytest.fixture
def plan(tmp_path):
    """A paper's runs.parquet (this code, both planned jobs), a figure and a table drawn after
    it, the notebook needing the table, and a leak table not drawn from the runs."""
    runs = tmp_path / "runs.parquet"
    metrics = [tmp_path / f"train/{job}/metrics.parquet" for job in ("a", "b")]
    planned = {str(path): {"experiment": "e", "dataset": "d", "method": job, "epsilon": "1",
                           "seeds": (0, 1), "params": {"lr": 0.5}, "code_version": CODE}
               for path, job in zip(metrics, ("a", "b"), strict=True)}
    for path, config in planned.items():
        Path(path).parent.mkdir(parents=True)
        Path(path).write_text("m")
        (Path(path).parent / "run_config.json").write_text(json.dumps({**config, "x": 1}))
        os.utime(path, (100, 100))
    pd.DataFrame({"experiment": "e", "dataset": "d", "method": ["a", "b"],
                  "code_version": [CODE, CODE]}).to_parquet(runs)
    os.utime(runs, (200, 200))
    figure, table, notebook, leak = (tmp_path / name for name in
                                     ("figure.png", "table.csv", "report.html", "leak.csv"))
    for path in (figure, table, notebook):
        path.write_text("x")
        os.utime(path, (300, 300))
    drawn = [str(figure), str(table), str(notebook)]
    return {"targets": [*drawn, str(leak)], "requires": {str(notebook): [str(table)]},
            "runs": {str(runs): (drawn, planned)},
            "paths": dict(runs=runs, metrics=metrics, figure=figure, table=table,
                          notebook=notebook, leak=leak)}


def _status(plan, tmp_path, code=CODE):
    table = report_status(plan["targets"], plan["requires"], plan["runs"], code,
                          tmp_path / "status.html")
    return table.set_index("output"), (tmp_path / "status.html").read_text()


def test_current_outputs_are_ok_and_missing_ones_listed(plan, tmp_path):
    table, page = _status(plan, tmp_path)
    p = plan["paths"]
    assert table["status"].to_dict() == {str(p["figure"]): "ok", str(p["table"]): "ok",
                                         str(p["notebook"]): "ok", str(p["leak"]): "missing"}
    assert table["in_report"].tolist() == [True, True, True, False]
    assert "3 reported and current, 0 stale, 1 missing" in page and str(p["leak"]) in page
    assert str(p["figure"]) not in page  # only missing and stale outputs are listed


@pytest.mark.parametrize("change, reason", [
    ("figure older than runs", "older than"),
    ("a training job failed", "1 of 2 planned training jobs have no results"),
    ("a job finished after aggregating", "1 training results are newer than it"),
    ("runs of other code", "trained by code 0000000000000000, not this code"),
    ("a job of another configuration", "1 training jobs ran with another configuration or "
                                       "code, e.g. "),
    ("runs of a larger plan", "holds 1 jobs that are not in this plan"),
    ("runs deleted", "runs.parquet: missing"),
])
def test_stale_outputs_say_why(plan, tmp_path, change, reason):
    p = plan["paths"]
    if change == "figure older than runs":
        os.utime(p["figure"], (150, 150))
    elif change == "a training job failed":
        p["metrics"][1].unlink()
    elif change == "a job finished after aggregating":
        os.utime(p["metrics"][0], (250, 250))
    elif change in ("runs of other code", "runs of a larger plan"):
        other = change == "runs of other code"
        pd.DataFrame({"experiment": "e", "dataset": "d", "method": ["a", "b" if other else "c"],
                      "code_version": [CODE, "0000000000000000" if other else CODE]},
                     ).to_parquet(p["runs"])
        os.utime(p["runs"], (200, 200))
    elif change == "a job of another configuration":
        recorded = p["metrics"][1].parent / "run_config.json"
        config = json.loads(recorded.read_text())
        recorded.write_text(json.dumps({**config, "seeds": [0, 1, 2]}))
    else:
        p["runs"].unlink()
    table, page = _status(plan, tmp_path)
    row = table.loc[str(p["figure"])]
    assert row["status"] == "stale" and reason in row["reason"] and row["in_report"]
    assert reason in page
    if change == "a job of another configuration":  # names the job and the key
        assert row["reason"].endswith(f"{p['metrics'][1].parent} (seeds)")
    if change != "figure older than runs":  # every output drawn from those runs
        assert (table.loc[[str(p["table"]), str(p["notebook"])], "status"] == "stale").all()
    assert table.loc[str(p["leak"]), "status"] == "missing"


def test_an_output_whose_report_input_is_missing_is_left_out(plan, tmp_path):
    p = plan["paths"]
    p["table"].unlink()
    table, page = _status(plan, tmp_path)
    notebook = table.loc[str(p["notebook"])]
    assert notebook["status"] == "stale" and not notebook["in_report"]
    assert f"its input {p['table']} is missing" in page
    assert table.loc[str(p["table"]), "status"] == "missing"
