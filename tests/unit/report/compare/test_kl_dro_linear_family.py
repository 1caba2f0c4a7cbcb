"""The linear KL-DRO family of the cross-paper leaderboards (issue #39): every method paper 004's
``cross_paper_linear`` experiment lists (BYOA's output perturbation and baselines, paper 004's
SPIDER estimators) runs on P-DRO under the family's one accountant (RDP), and each cell ranks at
least 4 private methods from at least 2 papers beside the trivial point 0."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpminimax import api
from dpminimax.algorithms import get_method
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.report.compare.leaderboard import FAMILIES, leaderboard, load_runs, select

ROOT = Path(__file__).resolve().parents[4]
SPEC = ROOT / "papers" / "dpdro" / "experiments.yaml"
FAMILY = FAMILIES["kl_dro_linear"]
METRIC = FAMILY.metric
N = 256


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("kl_dro_linear")
    tables = []
    for job in expand_jobs(load_experiments(SPEC), "smoke"):
        if job.experiment != "cross_paper_linear":
            continue
        job = replace(job, params={**job.params, "n": [N]})
        tables.append(api.train(job.run_config("test"), None, out / job.dataset / job.method))
    table = out / "results" / "dpdro" / "runs.parquet"
    table.parent.mkdir(parents=True)
    pd.concat(tables, ignore_index=True).to_parquet(table)
    return load_runs([table])


def test_every_listed_method_runs_on_the_problem_and_is_measured_exactly(runs):
    listed = set(load_experiments(SPEC)["experiments"]["cross_paper_linear"]["methods"])
    assert set(runs["method"]) == listed
    assert set(runs["dataset"]) == {"kl_dro_logistic"}
    assert (runs[METRIC] >= -1e-12).all()     # an excess over the exact optimum
    assert np.isfinite(runs[f"trivial_{METRIC}"]).all()
    assert set(runs["accountant"].astype(str)) == {"rdp"}


def test_the_cell_ranks_four_methods_from_two_papers_beside_the_trivial_point(runs):
    rows, dropped = select(runs, FAMILY, METRIC, accountant="rdp")
    assert dropped["other accountant"] == 0
    board, _ = leaderboard(rows, FAMILY, METRIC, draws=50)
    for _, cell in board.groupby(["dataset", "p_n", "p_d", "epsilon"]):
        methods = set(cell["method"]) - {"trivial"}
        assert "trivial" in set(cell["method"])
        assert len(methods) >= 4
        assert {"byoa", "dpdro"} <= {get_method(m).paper for m in methods}
