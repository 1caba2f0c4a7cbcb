"""RaCO-DP Fig. 3 (constraint satisfaction) from a hand-made results table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpminimax.report.aggregate import ResultsTableError
from dpminimax.report.fair.satisfaction import plot_constraint_satisfaction


def _table(seeds=(0, 1, 2)):
    rng = np.random.default_rng(0)
    rows = [
        {"dataset": d, "method": "racodp", "epsilon": eps, "seed": s, "p_gamma": g,
         "dp_violation": g + rng.normal(0, 0.01), "train_dp_violation": g + rng.normal(0, 0.005)}
        for d in ("adult", "credit-card") for eps in (1.0, 9.0) for g in (0.02, 0.05, 0.1)
        for s in seeds
    ]
    rows.append({"dataset": "adult", "method": "dp_sgd", "epsilon": 1.0, "seed": 0,
                 "p_gamma": np.nan, "dp_violation": 0.18, "train_dp_violation": 0.18})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seeds", [(0, 1, 2), (0,)])
def test_writes_pdf_and_png(tmp_path, seeds):
    paths = [tmp_path / "fig3.pdf", tmp_path / "fig3.png"]
    fig = plot_constraint_satisfaction(_table(seeds), violation="dp_violation", out_paths=paths)
    assert all(p.stat().st_size > 1000 for p in paths)
    assert len(fig.axes) == 2
    labels = {t.get_text() for t in fig.legends[0].get_texts()}
    assert {"target γ", "ε = 1, train", "ε = 9, test"} <= labels


def test_missing_train_metric_is_named(tmp_path):
    with pytest.raises(ResultsTableError, match="train_dp_violation"):
        plot_constraint_satisfaction(_table().drop(columns="train_dp_violation"),
                                     violation="dp_violation", out_paths=[tmp_path / "x.png"])


def test_no_targeted_run_is_an_error(tmp_path):
    table = _table()
    with pytest.raises(ValueError, match="racodp"):
        plot_constraint_satisfaction(table[table["method"] == "dp_sgd"], violation="dp_violation",
                                     out_paths=[tmp_path / "x.png"])
