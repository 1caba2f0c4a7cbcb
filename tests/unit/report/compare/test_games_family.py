"""The games family of the cross-paper leaderboards (issue #39): every method BYOA's
``cross_paper_*`` experiments list runs on every game of them, under the family's one accountant,
and each cell of the leaderboard holds at least 4 private methods from at least 2 papers beside the
trivial point (0, 0)."""

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
EXPERIMENTS = ("cross_paper_scsc", "cross_paper_cc")
#: Paper 004's SPIDER estimators on the games (Alg. 2; PrivateDiff), in every cell.
SPIDER = {"dp_double_spider_game", "privatediff_game"}
METRIC = FAMILIES["games"].metric
N = 64  # a few seconds for every job; NSEG's theory schedule costs O(n^2) gradients


def _jobs():
    spec = load_experiments(ROOT / "papers" / "byoa" / "experiments.yaml")
    return [job for job in expand_jobs(spec, "smoke") if job.experiment in EXPERIMENTS]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("games")
    tables = []
    for job in _jobs():
        job = replace(job, params={**job.params, "n": [N]})
        folder = out / job.experiment / job.dataset / job.method
        tables.append(api.train(job.run_config("test"), None, folder))
    table = out / "results" / "byoa" / "runs.parquet"
    table.parent.mkdir(parents=True)
    pd.concat(tables, ignore_index=True).to_parquet(table)
    return load_runs([table])  # as `dpminimax compare` reads them


def test_every_listed_method_runs_on_every_game_of_its_experiment(runs):
    spec = load_experiments(ROOT / "papers" / "byoa" / "experiments.yaml")
    expected = {(name, dataset) for name in EXPERIMENTS
                for dataset in spec["experiments"][name]["datasets"]}
    ran = runs.groupby(["experiment", "dataset"])["method"].agg(set)
    for experiment, dataset in expected:
        listed = set(spec["experiments"][experiment]["methods"])
        assert SPIDER <= listed
        assert ran[(experiment, dataset)] == listed
    assert np.isfinite(runs[METRIC]).all()
    assert np.isfinite(runs[f"trivial_{METRIC}"]).all()


def test_every_private_run_is_accounted_by_the_family_accountant(runs):
    """The games family keeps one accountant per cell (PLD): nothing of these runs is dropped."""
    private = runs[np.isfinite(runs["epsilon"].astype(float))]
    assert set(private["accountant"].astype(str)) == {"pld"}
    _, dropped = select(runs, FAMILIES["games"], METRIC, accountant="pld")
    assert dropped["other accountant"] == 0


def test_each_cell_ranks_four_methods_from_two_papers_beside_the_trivial_point(runs):
    rows, _ = select(runs, FAMILIES["games"], METRIC, accountant="pld")
    board, _ = leaderboard(rows, FAMILIES["games"], METRIC, draws=50)
    for _, cell in board.groupby(["dataset", "p_n", "p_d", "epsilon"]):
        methods = set(cell["method"]) - {"trivial"}
        assert "trivial" in set(cell["method"])
        assert len(methods) >= 4
        assert len({get_method(m).paper for m in methods}) >= 2
        assert SPIDER <= methods
