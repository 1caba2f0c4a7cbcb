"""RaCO-DP's benchmarks take the paper's numbers from its experiments.yaml and claims.yaml."""

from __future__ import annotations

import pytest

from dpminimax.bench.common import benchmark_settings
from dpminimax.bench.racodp import EXPERIMENTS_FILE, paper_table2_ms
from dpminimax.experiments import ExperimentConfigError


def test_table2_runs_in_the_workflow_with_the_papers_batch():
    settings = benchmark_settings(EXPERIMENTS_FILE, "table2")
    assert settings["workflow"] is True and settings["batch_size"] == 512
    assert settings["datasets"] == ["adult", "credit-card"]


def test_paper_table2_is_read_from_the_claims():
    table = paper_table2_ms()
    assert table["adult"] == {"sgd": 0.018, "dp_sgd": 0.037, "racodp": 0.064, "dpfermi": 85.0}
    assert table["credit-card"] == {"sgd": 0.020, "dp_sgd": 0.035, "racodp": 0.055,
                                    "dpfermi": 88.0}


def test_unknown_benchmark_names_the_file():
    with pytest.raises(ExperimentConfigError, match="no benchmarks.nope block"):
        benchmark_settings(EXPERIMENTS_FILE, "nope")
