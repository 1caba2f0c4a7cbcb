"""A paper that adds a method, a figure and a stage is still one folder (issue 41 item 3):
``papers/toy/plugin.py`` registers the method and the figure, ``papers/toy/rules.smk`` the stage,
and the real Snakefile trains, draws and runs them with nothing outside ``papers/toy`` edited;
the conformance suite holds the plugin's method to its privacy plan like any other."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from wfhelpers import REPO, run_snakemake

TOY_PLUGIN = Path(__file__).parent / "toy_plugin"

TOY = {
    "paper": "toy",
    "title": "A toy paper: its own DP-SGD variant and figure",
    "delta": 1.0e-5,
    "experiments": {
        "bars": {
            "description": "The toy method against DP-SGD.",
            "datasets": ["synthetic-fair"],
            "methods": {"toy_sgd": {"epsilons": ["1"], "params": {"lr": 1.0, "clip": 1.0}},
                        "dp_sgd": {"epsilons": ["1"], "params": {"lr": 1.0, "clip": 1.0}}},
            "figures": ["toy_accuracy_bars"],
            "scales": {"smoke": {"seeds": [0], "params": {"epochs": 1}}},
        },
    },
}


def shared_files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes()
            for folder in ("workflow", "papers", "envs") for path in (root / folder).rglob("*")
            if path.is_file() and "toy" not in path.relative_to(root).parts} | {
        "Snakefile": (root / "Snakefile").read_bytes()}


@pytest.mark.slow
def test_a_paper_with_its_own_method_figure_and_stage_is_one_folder(workflow_copy):
    before = shared_files(workflow_copy)
    shutil.copytree(TOY_PLUGIN, workflow_copy / "papers" / "toy")
    (workflow_copy / "papers" / "toy" / "experiments.yaml").write_text(
        yaml.safe_dump(TOY, sort_keys=False))
    result = run_snakemake(workflow_copy, "--cores", "2", "--config", "papers=[toy]",
                           "scale=smoke")
    assert result.returncode == 0, result.stderr[-3000:]
    runs = pd.read_parquet(
        workflow_copy / "results/toy/train/bars/synthetic-fair/toy_sgd/eps~1/metrics.parquet")
    assert set(runs["method"]) == {"toy_sgd"}
    assert (runs["epsilon_spent"] <= 1.0 + 1e-9).all() and (runs["epsilon_spent"] > 0.5).all()
    assert (workflow_copy / "results/toy/figures/bars/toy_accuracy_bars.png").stat().st_size
    ledger = pd.read_csv(workflow_copy / "results/toy/tables/privacy_ledger.csv")
    assert set(ledger["method"]) == {"toy_sgd", "dp_sgd"}
    assert shared_files(workflow_copy) == before  # nothing shared edited (results/ aside)


LEAKY_PLUGIN = """
import dataclasses

from dpminimax.algorithms.baselines.dp_sgd import DpSgd


class LeakySgd(DpSgd):
    name = "leaky_sgd"

    def plan(self, run, n, data=None):  # planted: noise calibrated for 4 x the target
        return super().plan(dataclasses.replace(run, epsilon=4 * run.epsilon), n, data)


def register(house):
    house.method(LeakySgd, family="toy")
"""


def conformance(plugin: Path, method: str) -> subprocess.CompletedProcess:
    """The conformance suite's tests of ``method``, registered by the plugin file ``plugin``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/unit/algorithms/test_conformance.py", "-k", method],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "DPMINIMAX_PLUGINS": str(plugin)})


def test_the_conformance_suite_checks_a_plugin_method(tmp_path):
    """``$DPMINIMAX_PLUGINS`` registers a paper's methods in the unit tests too: the toy
    method passes the conformance suite's ten per-method checks, and a plugin method that
    calibrates its noise for four times its target fails it."""
    result = conformance(TOY_PLUGIN / "plugin.py", "toy_sgd")
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.strip().splitlines()[-1].startswith("10 passed"), result.stdout[-500:]
    (tmp_path / "plugin.py").write_text(LEAKY_PLUGIN)
    leaky = conformance(tmp_path / "plugin.py", "leaky_sgd")
    assert leaky.returncode == 1
    assert "FAILED tests/unit/algorithms/test_conformance.py::test_record_is_the_accounting_of_" \
        "the_derived_event[leaky_sgd]" in leaky.stdout, leaky.stdout[-3000:]
