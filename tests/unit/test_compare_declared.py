"""``dpminimax compare`` end to end on a user's YAML-declared dataset (issue 39 items 3-4):
a 600-row synthetic CSV pinned by a declaration written here, the smoke grid of DP-FERMI's
``cross_paper_dp`` run on it as a dataset override (its own folder), every job planned on the
prepared size before any trains (batch sizes scaled to n), three fair-classification methods of
two papers trained with two seeds through the API, then compared."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpminimax import api
from dpminimax.cli import main
from dpminimax.data.checksum import file_digest
from dpminimax.epsilon import Epsilon
from dpminimax.experiments import ExperimentConfigError, expand_jobs, load_experiments
from dpminimax.feasibility import check_jobs, prepared_train_size

ROOT = Path(__file__).resolve().parents[2]
NAME = "toy-fair"
DECLARATION = """name: toy-fair
citation: test
licence: test
files:
  - filename: toy.csv
    url: https://example.invalid/toy.csv
    sha256: {sha}
format: {{delimiter: ",", header: true, columns: [x1, x2, x3, group, outcome]}}
label: {{column: outcome, positive: ["1"], names: ["0", "1"]}}
sensitive: {{column: group, groups: {{a: A, b: B}}, names: [A, B]}}
numeric: [x1, x2, x3]
"""
METHODS = ("racodp", "tran2021a", "dp_sgd")  # RaCO-DP's, DP-FERMI's comparison, the baseline


def _write_dataset(raw: Path, rows: int = 600) -> Path:
    """A separable-ish CSV whose label depends on the group (a fairness trade-off to find)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 3))
    group = rng.random(rows) < 0.4
    outcome = (x[:, 0] + 0.8 * group + 0.3 * rng.normal(size=rows)) > 0.3
    path = raw / NAME / "toy.csv"
    path.parent.mkdir(parents=True)
    pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2],
                  "group": np.where(group, "a", "b"),
                  "outcome": outcome.astype(int)}).to_csv(path, index=False)
    return path


@pytest.fixture
def declared(tmp_path, monkeypatch):
    raw, decls = tmp_path / "raw", tmp_path / "declared"
    decls.mkdir()
    csv = _write_dataset(raw)
    (decls / f"{NAME}.yaml").write_text(DECLARATION.format(sha=file_digest(csv)))
    for key, value in {"DPMINIMAX_DATASETS": decls, "DPMINIMAX_DATA_RAW": raw,
                       "DPMINIMAX_CACHE": tmp_path / "cache", "DPMINIMAX_DATA": "",
                       "DPMINIMAX_OFFLINE": "1"}.items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_compare_on_a_declared_dataset_end_to_end(declared, capsys):
    source = ROOT / "papers" / "dpfermi" / "experiments.yaml"
    spec = load_experiments(source)
    spec["experiments"] = {"cross_paper_dp": spec["experiments"]["cross_paper_dp"]}
    jobs = [dataclasses.replace(job, seeds=(0, 1))
            for job in expand_jobs(spec, "smoke", dataset_override=[NAME])
            if job.method in METHODS]
    assert sorted(job.method for job in jobs) == sorted(METHODS)
    assert {job.results for job in jobs} == {f"results/override~{NAME}"}  # its own folder
    data = Path("results/data") / NAME
    api.prepare_dataset(NAME, data)
    n_train = prepared_train_size(data / "meta.json", None, 100)
    assert n_train == 450
    # the smoke grid asks for batches of 1024 > n_train: every job is planned on the prepared
    # size before any trains, and a plan that cannot hold is refused naming the parameter
    planned = check_jobs(jobs, lambda _: n_train, Path("plans.json"), "test",
                         lambda _: str(source))
    assert planned == len(jobs)
    (racodp,) = (job for job in jobs if job.method == "racodp")
    tight = dataclasses.replace(racodp, epsilon=Epsilon.parse("0.0001"))
    with pytest.raises(ExperimentConfigError, match=r"experiments\.cross_paper_dp\.methods\."
                       r"racodp: job toy-fair/racodp/eps~0.0001 \(n_train 450\) cannot be "
                       r"planned: .* lower batch_size"):
        check_jobs([tight], lambda _: n_train, Path("plans.json"), "test", lambda _: str(source))
    for job in jobs:
        api.train(job.run_config("test"), data_dir=data, out_dir=job.train_dir)
    runs = Path(f"results/override~{NAME}/dpfermi/runs.parquet")
    api.aggregate([f"{job.train_dir}/metrics.parquet" for job in jobs], [], runs)
    out = Path(f"results/override~{NAME}/compare/fair_classification")
    assert main(["compare", str(runs), "--family", "fair_classification", "--delta", "1e-5",
                 "--out", str(out), "--draws", "200"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["methods"] == sorted([*METHODS, "trivial"])
    assert printed["runs"] == 2 * (5 + 6 + 1)  # seeds x (RaCO-DP's, Tran's, DP-SGD's configs)
    board = pd.read_csv(out / "leaderboard.csv")
    assert set(board["dataset"]) == {NAME} and set(board["epsilon"]) == {1.0}
    # the same tuning budget: DP-SGD's one configuration sets k for RaCO-DP's 5 and Tran's 6
    assert set(board["tuning_budget"]) == {1}
    loose = board[np.isclose(board["budget"], 0.2)].set_index("method")
    assert loose.loc["trivial", "value"] == pytest.approx(
        pd.read_parquet(runs)["trivial_test_error"].mean())
    # two seeds per configuration: every method reaching the budget has an interval
    reached = loose.dropna(subset=["value"])
    assert len(reached) >= 2 and reached[["low", "high"]].notna().all().all()
    assert "| dataset=toy-fair, epsilon=1 | 0.2 |" in (out / "summary.md").read_text()



@pytest.mark.parametrize("experiment, family, methods", [
    ("cross_paper_dp", "fair_classification",
     {"racodp", "dpfermi", "tran2021a", "tran2021b", "dp_sgd"}),
    ("cross_paper_eo", "fair_classification_eo",
     {"racodp", "dpfermi", "jagielski2019", "tran2021b", "dp_sgd"}),
])
def test_every_method_of_a_fair_family_runs_and_is_ranked(declared, capsys, experiment, family,
                                                          methods):
    """DP-FERMI's cross-paper experiment of each fairness notion (smoke grid) on the declared
    dataset: every method it lists (at least 4 papers) runs and is ranked by its family's
    leaderboard beside the trivial predictor, under one accountant (RDP) and delta."""
    from dpminimax.algorithms import get_method

    spec = load_experiments(ROOT / "papers" / "dpfermi" / "experiments.yaml")
    spec["experiments"] = {experiment: spec["experiments"][experiment]}
    jobs = list(expand_jobs(spec, "smoke", dataset_override=[NAME]))
    assert {job.method for job in jobs} == methods
    assert len({get_method(m).source for m in methods}) >= 4  # published algorithms
    data = Path("results/data") / NAME
    api.prepare_dataset(NAME, data)
    for job in jobs:
        api.train(job.run_config("test"), data_dir=data, out_dir=job.train_dir)
    runs = Path(f"results/override~{NAME}/dpfermi/runs.parquet")
    api.aggregate([f"{job.train_dir}/metrics.parquet" for job in jobs], [], runs)
    out = Path(f"results/override~{NAME}/compare/{family}")
    assert main(["compare", str(runs), "--family", family, "--delta", "1e-5",
                 "--accountant", "rdp", "--out", str(out), "--draws", "200"]) == 0
    assert json.loads(capsys.readouterr().out)["methods"] == sorted([*methods, "trivial"])
    # a run's point on the trade-off (gamma, lambda, tolerance) is a knob, not a configuration
    assert set(pd.read_csv(out / "leaderboard.csv")["tuning_budget"]) == {1}
