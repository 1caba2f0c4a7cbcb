"""A bad configuration fails when the DAG is built, with a message naming the offending key."""

from __future__ import annotations

import pytest
import yaml
from wfhelpers import copy_workflow, run_snakemake

GOOD_PAPER = {
    "paper": "tiny",
    "title": "validation fixture",
    "delta": 1.0e-5,
    "experiments": {
        "exp": {
            "description": "x",
            "datasets": ["synthetic-fair"],
            "methods": {"dp_sgd": {"epsilons": ["1"], "params": {"lr": 1.0}}},
            "figures": ["accuracy_vs_epsilon"],
            "scales": {"smoke": {"seeds": [0]}},
        }
    },
}


def _write_paper(root, paper, paper_id="tiny"):
    path = root / "papers" / paper_id
    path.mkdir(parents=True, exist_ok=True)
    (path / "experiments.yaml").write_text(yaml.safe_dump({**paper, "paper": paper_id}))


def _dry_run(root, *extra):
    return run_snakemake(root, "-n", "--config", "scale=smoke", "papers=[tiny]", *extra)


def _mutated(path, value):
    paper = yaml.safe_load(yaml.safe_dump(GOOD_PAPER))
    node = paper
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return paper


def test_good_config_builds_a_dag(tmp_path):
    root = copy_workflow(tmp_path, papers=False)
    _write_paper(root, GOOD_PAPER)
    result = _dry_run(root)
    assert result.returncode == 0, result.stderr
    assert "train" in result.stdout


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("experiments", "exp", "methods", "dp_sgd"), None, "dp_sgd"),
        (("experiments", "exp", "datasets"), ["no-such-data"], "datasets[0]"),
        (("experiments", "exp", "methods", "dp_sgd", "epsilons"), ["0"], "epsilon must be > 0"),
        (("delta",), 1.0, "delta"),
        (("experiments", "exp", "scales", "smoke", "seeds"), None, "seeds"),
        (("experiments", "exp", "methods", "dp_sgd", "params"), {"lrr": 1.0}, "lrr"),
    ],
)
def test_bad_paper_config_fails_naming_the_key(tmp_path, path, value, expected):
    root = copy_workflow(tmp_path, papers=False)
    paper = _mutated(path, value)
    if path[-1] == "dp_sgd" and value is None:
        paper["experiments"]["exp"]["methods"]["dp_sgdd"] = {"epsilons": ["1"]}
        expected = "dp_sgdd"
    _write_paper(root, paper)
    result = _dry_run(root)
    assert result.returncode != 0
    assert expected in result.stderr + result.stdout, result.stderr


def test_bad_workflow_config_fails_naming_the_key(tmp_path):
    root = copy_workflow(tmp_path, papers=False)
    _write_paper(root, GOOD_PAPER)
    result = _dry_run(root, "scale=huge")
    assert result.returncode != 0
    assert "scale" in result.stderr + result.stdout


def test_experiments_selection_keeps_only_the_named_experiments(tmp_path):
    root = copy_workflow(tmp_path, papers=False)
    paper = yaml.safe_load(yaml.safe_dump(GOOD_PAPER))
    paper["experiments"]["other"] = {**paper["experiments"]["exp"], "figures": ["tradeoff_dp"]}
    _write_paper(root, paper)
    both = _dry_run(root)
    only = _dry_run(root, "experiments={tiny: [other]}")
    assert both.returncode == 0 and only.returncode == 0, only.stderr
    assert "figures/exp/" in both.stdout and "figures/other/" in both.stdout
    assert "figures/other/" in only.stdout and "figures/exp/" not in only.stdout
    assert "train/exp/" not in only.stdout


def test_selecting_experiments_of_one_paper_runs_that_paper_only(tmp_path):
    """Issue 40 item 8: ``experiments={tiny: [exp]}`` also planned every other paper."""
    root = copy_workflow(tmp_path, papers=False)
    _write_paper(root, GOOD_PAPER)
    _write_paper(root, GOOD_PAPER, "other")
    result = run_snakemake(root, "-n", "--config", "scale=smoke", "papers=[tiny,other]",
                           "experiments={tiny: [exp]}")
    assert result.returncode == 0, result.stderr
    assert "results/tiny/train/exp/" in result.stdout
    assert "results/other/" not in result.stdout


@pytest.mark.parametrize(("selection", "expected"), [
    ("experiments={tiny: [nope]}", "nope"),
    ("experiments={racodp: [fig4_dp]}", "racodp"),
])
def test_bad_experiments_selection_fails_naming_it(tmp_path, selection, expected):
    root = copy_workflow(tmp_path, papers=False)
    _write_paper(root, GOOD_PAPER)
    result = _dry_run(root, selection)
    assert result.returncode != 0
    message = result.stderr + result.stdout
    assert expected in message and "experiments" in message, message
