"""The tuning protocol (RaCO-DP App. E.2): search space, checkpoint rule, phase-1 choice, and the
phase-1 -> selection -> phase-2 drivers on a small synthetic problem."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from dpminimax import api
from dpminimax.algorithms import get_method
from dpminimax.data import load_dataset
from dpminimax.tuning import (
    CheckpointSelector,
    SearchSpaceError,
    choose_configs,
    sample_configs,
    validate_search_space,
)
from dpminimax.tuning.protocol import (
    PHASE1_SEED_OFFSET,
    TuningSpec,
    fit_with_selection,
    phase1_runs,
    split_validation,
)

SPACE = {"lr": {"log_uniform": [1e-3, 1.0]}, "temperature": {"uniform": [1.0, 10.0]},
         "clip": {"values": [1.0, 3.0, 10.0]}}


def test_sampled_configs_are_reproducible_and_inside_the_ranges():
    first, again = sample_configs(SPACE, 50, seed=3), sample_configs(SPACE, 50, seed=3)
    assert first == again
    assert first != sample_configs(SPACE, 50, seed=4)
    assert all(1e-3 <= c["lr"] <= 1.0 and 1.0 <= c["temperature"] <= 10.0 for c in first)
    assert {c["clip"] for c in first} == {1.0, 3.0, 10.0}
    # log-uniform: about half the draws below the geometric midpoint sqrt(1e-3 * 1) ~ 0.0316
    below = np.mean([c["lr"] < 0.0316 for c in sample_configs(SPACE, 2000, seed=0)])
    assert 0.45 < below < 0.55


@pytest.mark.parametrize("space, message", [
    ({}, "empty"),
    ({"lr": {"normal": [0, 1]}}, "lr"),
    ({"lr": {"uniform": [1.0, 0.1]}}, "low <= high"),
    ({"lr": {"log_uniform": [0.0, 1.0]}}, "> 0"),
    ({"clip": {"values": []}}, "non-empty"),
])
def test_malformed_search_spaces_name_the_entry(space, message):
    with pytest.raises(SearchSpaceError, match=message):
        validate_search_space(space)


def test_tuning_spec_rejects_a_parameter_that_is_both_cell_and_searched():
    with pytest.raises(SearchSpaceError, match="both a cell and searched"):
        TuningSpec.from_dict({"search": {"gamma": {"values": [0.1]}}, "cell": ["gamma"],
                              "configs": 2, "seeds": 1})


class _ScriptedModel:
    """predict returns, per call, the next scripted (R, n) prediction tensor."""

    def __init__(self, script):
        self.script = list(script)

    def predict(self, state, x):
        return self.script.pop(0)


def test_checkpoint_rule_keeps_the_best_satisfying_iterate_and_falls_back_to_the_last():
    y_val = torch.tensor([1, 1, 0, 0])
    # three evaluations of two runs; each evaluation calls predict(val) then predict(train)
    val = [torch.tensor([[1, 1, 0, 1], [0, 0, 0, 0]]),    # acc 0.75 / 0.5
           torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0]]),    # acc 1.0 / 1.0
           torch.tensor([[1, 0, 0, 1], [1, 1, 1, 0]])]    # acc 0.5 / 0.75
    # the "train predictions" encode each run's violation directly (see violation below)
    train = [torch.tensor([[-1], [5]]), torch.tensor([[3], [7]]), torch.tensor([[-2], [9]])]
    script = [item for pair in zip(val, train, strict=True) for item in pair]
    selector = CheckpointSelector(torch.zeros(1, 1), torch.zeros(4, 1), y_val,
                                  lambda predicted: predicted[:, 0].float(), every=10)
    model = _ScriptedModel(script)
    states = [{"w": torch.tensor([[float(step)], [float(step)]])} for step in (10, 20, 30)]
    for step, state in zip((10, 20, 30), states, strict=True):
        for inner in range(step - 9, step + 1):
            selector(inner, model, state)
    state, records = selector.select(30, model, states[-1])
    # run 0: satisfied at steps 10 (acc .75) and 30 (acc .5), not at 20 -> step 10
    assert records[0] == {"selected_step": 10, "val_accuracy": 0.75,
                          "selection_train_violation": -1.0, "satisfied": True}
    assert float(state["w"][0, 0]) == 10.0
    # run 1: never satisfied -> its last iterate, flagged
    assert records[1]["satisfied"] is False and records[1]["selected_step"] == 30
    assert float(state["w"][1, 0]) == 30.0


def test_phase1_choice_prefers_feasible_configs_then_validation_accuracy():
    rows = []
    for gamma, config, seed, acc, ok in [
        (0.1, 0, 0, 0.90, False), (0.1, 0, 1, 0.95, True),   # best accuracy but one seed fails
        (0.1, 1, 0, 0.80, True), (0.1, 1, 1, 0.82, True),
        (0.1, 2, 0, 0.85, True), (0.1, 2, 1, 0.84, True),    # the feasible winner
        (0.2, 0, 0, 0.70, False), (0.2, 0, 1, 0.71, False),  # nothing feasible at 0.2
        (0.2, 1, 0, 0.90, False), (0.2, 1, 1, 0.91, False),
    ]:
        violation = -0.01 if ok else (0.05 if config == 0 else 0.20)
        rows.append({"p_gamma": gamma, "config_id": config, "seed": seed, "val_accuracy": acc,
                     "satisfied": ok, "selection_train_violation": violation})
    chosen = choose_configs(pd.DataFrame(rows), ["p_gamma"]).set_index("p_gamma")
    assert chosen.loc[0.1, "config_id"] == 2 and chosen.loc[0.1, "feasible"]
    assert chosen.loc[0.1, "feasible_configs"] == 2
    # no feasible config: the smallest mean train violation wins (config 0), flagged
    assert chosen.loc[0.2, "config_id"] == 0 and not chosen.loc[0.2, "feasible"]


@pytest.fixture(scope="module")
def synthetic():
    return load_dataset("synthetic-fair", max_rows=3000)


TUNING = {"search": {"lr": {"log_uniform": [0.05, 1.0]},
                     "noise_multiplier": {"values": [3.0, 6.0]}},
          "cell": ["gamma"], "configs": 4, "seeds": 2, "eval_every": 10}
PARAMS = {"gamma": [0.05, 0.2], "max_steps": 60, "histogram_scale": 10.0, "batch_size": 128}


def test_batched_selection_equals_each_run_selected_alone(synthetic):
    method = get_method("racodp")
    tuning = TuningSpec.from_dict(TUNING)
    runs, ids = phase1_runs(tuning, PARAMS, 1.0, 1e-5)
    assert len(runs) == 4 * 2 * 2 and min(r.seed for r in runs) == PHASE1_SEED_OFFSET
    data, x_val, y_val = split_validation(synthetic, tuning.validation_fraction)
    device = torch.device("cpu")
    fit, records = fit_with_selection(method, data, runs, device, x_val=x_val, y_val=y_val,
                                      eval_every=10)
    assert [r.run_id for r in fit.runs] == [r.run_id for r in runs]
    for index in (0, 5, 13):
        alone, record = fit_with_selection(method, data, [runs[index]], device, x_val=x_val,
                                           y_val=y_val, eval_every=10)
        assert record[0] == records[index]
        for key in fit.state:
            assert torch.equal(alone.state[key][0], fit.state[key][index])


def test_validation_rows_are_held_out_of_training(synthetic):
    data, x_val, _ = split_validation(synthetic, 0.125)
    assert len(data.y_train) + len(x_val) == len(synthetic.y_train)
    assert len(x_val) == round(0.125 * len(synthetic.y_train))
    train_rows = {row.tobytes() for row in data.x_train}
    assert not any(row.tobytes() in train_rows for row in x_val)


def test_protocol_end_to_end_picks_the_best_feasible_config_and_reports_fresh_seeds(
        tmp_path, synthetic):
    api.prepare_dataset("synthetic-fair", tmp_path / "data", max_rows=3000)
    config = {"paper": "racodp", "experiment": "tuned", "dataset": "synthetic-fair",
              "method": "racodp", "epsilon": "1", "delta": 1e-5, "seeds": [0, 1, 2],
              "params": PARAMS, "tuning": TUNING}
    trials = api.tune(config, tmp_path / "data", tmp_path / "trials.parquet")
    assert len(trials) == 16 and set(trials["seed"]) == {PHASE1_SEED_OFFSET,
                                                         PHASE1_SEED_OFFSET + 1}
    api.select_configs(config, tmp_path / "trials.parquet", tmp_path / "selected.json")
    selected = json.loads((tmp_path / "selected.json").read_text())
    configs = sample_configs(TUNING["search"], 4, 0)
    for cell in selected["cells"]:
        rows = trials.loc[trials["p_gamma"] == cell["gamma"]]
        per_config = rows.groupby("config_id").agg(acc=("val_accuracy", "mean"),
                                                   ok=("satisfied", "all"))
        feasible = per_config.loc[per_config["ok"]]
        if len(feasible):
            assert cell["config_id"] == feasible["acc"].idxmax()
        assert cell["params"] == configs[cell["config_id"]]
    table = api.train(config, tmp_path / "data", tmp_path / "out",
                      selection=tmp_path / "selected.json")
    assert sorted(set(table["seed"])) == [0, 1, 2] and len(table) == 6
    for _, row in table.iterrows():
        cell = next(c for c in selected["cells"] if c["gamma"] == row["p_gamma"])
        assert row["config_id"] == cell["config_id"]
        assert row["p_lr"] == cell["params"]["lr"]
        if row["satisfied"]:  # the selected checkpoint meets the constraint on the train set
            assert row["train_max_constraint_violation"] <= 1e-6
