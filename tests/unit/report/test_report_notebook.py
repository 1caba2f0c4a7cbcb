"""The report notebook: generated from a paper's experiments.yaml, executed, rendered to HTML."""

from __future__ import annotations

import base64
import math
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml

from dpminimax import api
from dpminimax.experiments import load_experiments
from dpminimax.report import notebook as nb
from dpminimax.report.registry import UnknownFigureError

PAPERS = Path(__file__).resolve().parents[3] / "papers"

SPEC = {
    "paper": "toy",
    "title": "A toy paper",
    "delta": 1e-5,
    "experiments": {
        "acc": {
            "description": "Accuracy and attacks of DP-SGD.",
            "datasets": ["adult", "credit-card"],
            "methods": {"dp_sgd": {"epsilons": ["1", "3"]}, "dp_sgd_nonprivate": {}},
            "figures": ["accuracy_vs_epsilon", "attack_auc_vs_epsilon"],
        },
        "cmp": {
            "description": "Cross-method comparison.",
            "datasets": ["adult"],
            "methods": {"racodp": {"epsilons": ["1"]}, "dpfermi": {"epsilons": ["1"]}},
            "figures": ["dp_violation_vs_epsilon"],
            "tables": ["dominance_dp"],
        },
    },
}


def _runs() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for dataset in ("adult", "credit-card"):
        for method, eps in (("dp_sgd", 1.0), ("dp_sgd", 3.0), ("dp_sgd_nonprivate", math.inf)):
            for seed in range(2):
                rows.append({
                    "experiment": "acc", "dataset": dataset, "method": method, "epsilon": eps,
                    "delta": 1e-5, "seed": seed, "data_standin": dataset == "credit-card",
                    "test_accuracy": 0.8 + rng.normal(0, 0.01),
                    "attack_auc": 0.5 + abs(rng.normal(0, 0.01)),
                })
    for method, gamma, lam in (("racodp", 0.05, None), ("dpfermi", None, 1.0)):
        for seed in range(2):
            rows.append({
                "experiment": "cmp", "dataset": "adult", "method": method, "epsilon": 1.0,
                "delta": 1e-5, "seed": seed, "data_standin": False, "p_gamma": gamma,
                "p_lam": lam, "test_accuracy": 0.8, "test_error": 0.2 + 0.01 * seed,
                "dp_violation": 0.03 + 0.01 * seed,
            })
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A paper's results directory as the workflow leaves it before the notebook rule."""
    root = tmp_path_factory.mktemp("toy")
    spec_path = root / "experiments.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    out = root / "results" / "toy"
    out.mkdir(parents=True)
    _runs().to_parquet(out / "runs.parquet")
    api.make_table(out / "runs.parquet", out / "tables" / "summary.csv")
    api.make_experiment_table(out / "runs.parquet", "dominance_dp",
                              out / "tables" / "cmp" / "dominance_dp.csv", experiment="cmp")
    (out / "tables" / "claims.md").write_text(
        "| id | verdict |\n|---|---|\n| toy-claim-1 | reproduced |\n")
    return spec_path, out


def test_one_figure_cell_per_figure_of_every_paper():
    for path in sorted(PAPERS.glob("*/experiments.yaml")):
        spec = load_experiments(path)
        notebook = nb.build_notebook(spec)
        expected = [(name, figure) for name, exp in spec["experiments"].items()
                    for figure in exp.get("figures", [])]
        cells = nb.figure_cells(notebook)
        assert len(cells) == len(expected), path
        for (name, figure), source in zip(expected, cells, strict=True):
            assert f"{figure!r}" in source and f"experiment={name!r}" in source
        assert notebook.metadata["dpminimax"]["paper"] == spec["paper"]


def test_unknown_figure_or_table_fails_before_running():
    bad = {**SPEC, "experiments": {"x": {**SPEC["experiments"]["acc"], "figures": ["nope"]}}}
    with pytest.raises(UnknownFigureError, match="nope"):
        nb.build_notebook(bad)
    bad = {**SPEC, "experiments": {"x": {**SPEC["experiments"]["cmp"], "tables": ["nope"]}}}
    with pytest.raises(UnknownFigureError, match="nope"):
        nb.build_notebook(bad)


def test_draw_returns_the_figure_stamped_for_stand_ins():
    runs = _runs()
    fig = nb.draw(runs, "accuracy_vs_epsilon", experiment="acc")
    assert "credit-card" in fig._suptitle.get_text()
    assert [ax.get_title() for ax in fig.axes[:2]] == ["adult", "credit-card"]
    clean = nb.draw(runs, "dp_violation_vs_epsilon", experiment="cmp")
    assert clean._suptitle is None


def test_summary_view_is_one_row_per_series_and_one_column_per_metric(results):
    _, out = results
    view = nb.summary_view(pd.read_csv(out / "tables" / "summary.csv"), "cmp")
    assert list(view.index.names) == ["dataset", "method", "epsilon"]
    assert len(view) == 2 and "dp_violation" in view.columns
    assert "attack_auc" not in view.columns   # not measured by this experiment's runs
    assert all("±" in cell for cell in view["dp_violation"])
    acc = nb.summary_view(pd.read_csv(out / "tables" / "summary.csv"), "acc")
    assert set(acc.index.get_level_values("epsilon")) == {"1", "3", "∞ (non-private)"}
    assert nb.summary_view(pd.read_csv(out / "tables" / "summary.csv"), "none").empty


def test_executed_notebook_html_holds_every_figure(results):
    spec_path, out = results
    html_path, ipynb_path = out / "report.html", out / "report.ipynb"
    api.make_notebook(spec_path, html_path, notebook_out=ipynb_path, claims=True, timeout=300)
    executed = nbformat.read(ipynb_path, as_version=4)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [c for c in executed.cells
               if c.cell_type == "code" and c.source.startswith("nb.draw(")]
    assert len(figures) == 3
    for cell in figures:
        pngs = [o.data["image/png"] for o in cell.outputs if "image/png" in o.get("data", {})]
        assert len(pngs) == 1 and base64.b64decode(pngs[0]).startswith(b"\x89PNG")
    html = html_path.read_text(encoding="utf-8")
    assert html.count('src="data:image/png;base64,') == 3
    for text in ("A toy paper", "Accuracy and attacks of DP-SGD.", "toy-claim-1",
                 "attack_auc_vs_epsilon", "best_method"):
        assert text in html
    assert sorted(p.name for p in out.iterdir()) == [
        "report.html", "report.ipynb", "runs.parquet", "tables"]   # no temporary left
