"""Schema errors of the workflow config and of experiments.yaml are one line naming the key path
and what its value must be (issue 40 item 5), through ``check_schema``, which
``workflow/rules/common.smk`` runs on the config and on every paper before Snakemake's validate."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from dpminimax.config_schema import check_schema
from dpminimax.experiments import ExperimentConfigError

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "workflow" / "schemas"
CONFIG = yaml.safe_load((REPO / "workflow" / "config" / "config.yaml").read_text())
PAPER = {
    "paper": "tiny", "title": "fixture", "delta": 1.0e-5,
    "experiments": {"exp": {
        "description": "x", "datasets": ["synthetic-fair"],
        "methods": {"dp_sgd": {"epsilons": ["1"], "params": {"lr": 1.0}}},
        "figures": ["accuracy_vs_epsilon"], "scales": {"smoke": {"seeds": [0]}}}},
}


def _set(base, path, value):
    out = copy.deepcopy(base)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def _error(instance, schema) -> str:
    with pytest.raises(ExperimentConfigError) as info:
        check_schema(instance, SCHEMAS / schema, "SRC")
    message = str(info.value)
    assert "\n" not in message and message.startswith("SRC: ")
    return message


EPS = ("experiments", "exp", "methods", "dp_sgd", "epsilons")
SEEDS = ("experiments", "exp", "scales", "smoke", "seeds")


@pytest.mark.parametrize("path, value, says", [
    (("delta",), 1.5, "SRC: delta: must be a number > 0 and < 1; got 1.5"),
    (EPS, [-1], "SRC: experiments.exp.methods.dp_sgd.epsilons[0]: must be a number > 0 or a "
                "string matching"),
    (EPS, ["one"], "epsilons[0]: must be a number > 0 or a string matching"),
    (EPS, [], "epsilons: must be a list of at least 1 item(s)"),
    (SEEDS, [-1], "SRC: experiments.exp.scales.smoke.seeds[0]: must be an integer >= 0; got -1"),
    (SEEDS, None, "experiments.exp.scales.smoke: 'seeds' is a required property"),
    (("experiments", "exp", "datasets"), "adult", "experiments.exp.datasets: must be a list"),
    (("title",), None, "SRC: 'title' is a required property"),
])
def test_experiments_schema_errors_are_one_line_naming_the_key(path, value, says):
    assert says in _error(_set(PAPER, path, value), "experiments.schema.yaml")


@pytest.mark.parametrize("path, value, says", [
    (("scale",), "huge",
     "SRC: scale: must be one of 'smoke', 'default', 'quick', 'paper'; got 'huge'"),
    (("data", "max_rows"), 5, "SRC: data.max_rows: must be an integer or null >= 100; got 5"),
    (("data", "split_seed"), -1, "data.split_seed: must be an integer >= 0; got -1"),
    (("papers",), [], "SRC: papers: must be a list of at least 1 item(s)"),
    (("tuning",), "grid", "tuning: must be one of 'none', 'protocol'; got 'grid'"),
    (("scales",), "smoke", "'scales' was unexpected"),
    (("compare", "families", "games", "accountant"), 3, "compare.families.games.accountant"),
    (("compare", "families", "games", "runs", "byoa"), [], "compare.families.games.runs.byoa"),
    (("compare", "families", "kl_dro", "runs"), None, "compare.families.kl_dro: 'runs' is a "
                                                        "required property"),
    (("compare", "families", "bilevel"), {"runs": {"bilevel": "all"}},
     "SRC: compare.families: must be one of 'fair_classification', 'fair_classification_eo', "
     "'kl_dro', 'kl_dro_linear', 'games', 'hyperparameter_tuning'; got 'bilevel'"),
    (("compare", "draws"), 10, "SRC: compare.draws: must be an integer >= 100; got 10"),
])
def test_config_schema_errors_are_one_line_naming_the_key(path, value, says):
    assert says in _error(_set(CONFIG, path, value), "config.schema.yaml")


def test_the_shipped_configs_and_papers_pass():
    for path in sorted((REPO / "workflow" / "config").glob("*.yaml")):
        check_schema({**CONFIG, **yaml.safe_load(path.read_text())},
                     SCHEMAS / "config.schema.yaml", str(path))
    papers = sorted((REPO / "papers").glob("*/experiments.yaml"))
    assert len(papers) >= 6
    for path in papers:
        check_schema(yaml.safe_load(path.read_text()), SCHEMAS / "experiments.schema.yaml",
                     str(path))
    check_schema(PAPER, SCHEMAS / "experiments.schema.yaml", "fixture")


def test_the_workflow_checks_config_and_papers_with_check_schema():
    text = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert 'check_against_schema(config, "config.schema.yaml"' in text
    assert 'check_against_schema(spec, "experiments.schema.yaml"' in text
    assert "check_schema(instance, SCHEMAS / name, source)" in text


def test_the_compare_block_knows_every_family_of_the_leaderboards():
    from dpminimax.report.compare.leaderboard import FAMILIES

    schema = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())
    families = schema["properties"]["compare"]["properties"]["families"]
    assert families["propertyNames"]["enum"] == list(FAMILIES)
