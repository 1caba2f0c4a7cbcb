"""A YAML-declared dataset (german-credit) trains RaCO-DP and DP-SGD through the real workflow,
on a 1000-row synthetic ``german.data`` in the canonical format, pinned by a user declaration.

German credit has 750 training rows: the smoke fig9 batch of 64 (sized for 4000-row smoke data)
makes one RaCO-DP step cost epsilon 0.0133 > 0.01, so this test halves it to 32 in its copy."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from wfhelpers import run_snakemake

from dpminimax.data.checksum import file_digest
from dpminimax.data.declared import SHIPPED_DIR
from dpminimax.data.registry import write_canonical_sample

pytestmark = pytest.mark.slow

TARGETS = [  # an override's outputs go to a folder of their own
    "results/override~german-credit/baselines/train/dpsgd_lr/german-credit/dp_sgd/eps~1/"
    "metrics.parquet",
    "results/override~german-credit/racodp/train/fig4_dp/german-credit/racodp/eps~1/"
    "metrics.parquet",
    "results/override~german-credit/racodp/train/fig9_low_budget/german-credit/racodp/eps~0.01/"
    "metrics.parquet",
]


def test_german_credit_trains_racodp_and_dp_sgd(workflow_copy, tmp_path, monkeypatch):
    raw, decls = tmp_path / "raw", tmp_path / "declared"
    decls.mkdir()
    (german,) = write_canonical_sample("german-credit", raw / "german-credit", n_rows=1000)
    pinned = (SHIPPED_DIR / "german-credit.yaml").read_text().replace(
        "sha256: null", f"sha256: {file_digest(german)}")
    (decls / "german-credit.yaml").write_text(pinned)
    monkeypatch.setenv("DPMINIMAX_DATA_RAW", str(raw))
    monkeypatch.setenv("DPMINIMAX_DATASETS", str(decls))
    monkeypatch.setenv("DPMINIMAX_OFFLINE", "1")
    grid = workflow_copy / "papers/racodp/experiments.yaml"
    smoke_fig9 = "params: {max_steps: 40, batch_size: 64, gamma: [0.05, 0.15]}"
    assert grid.read_text().count(smoke_fig9) == 1
    grid.write_text(grid.read_text().replace(smoke_fig9, smoke_fig9.replace("64", "32")))
    config = tmp_path / "german.yaml"
    config.write_text("scale: smoke\npapers: [baselines, racodp]\n"
                      "dataset_override: [german-credit]\n"
                      "data: {max_rows: null, split_seed: 100, missing_data: fail}\n")
    result = run_snakemake(workflow_copy, "--cores", "2", "--configfile", str(config), "--",
                           *TARGETS, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    meta = json.loads((workflow_copy / "results/data/german-credit/meta.json").read_text())
    assert meta["meta"]["n_train"] + meta["meta"]["n_test"] == 1000
    assert "standin" not in meta["meta"]
    assert meta["meta"]["source_files"][0]["verified_by"] == "sha256"
    for target in TARGETS:
        runs = pd.read_parquet(workflow_copy / target)
        assert len(runs) and (runs["dataset"] == "german-credit").all()
        assert (runs["epsilon_spent"] <= runs["epsilon"] * (1 + 1e-9)).all()
