"""The Python API (``dpminimax.fit``): the README example runs, arrays and DataFrames agree,
parameters are validated, predictions have the documented shapes, accounting is recorded."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from dp_accounting.dp_event import NonPrivateDpEvent

import dpminimax
from dpminimax.algorithms import METHODS
from dpminimax.algorithms.base import UnknownParameterError

README = Path(__file__).resolve().parents[3] / "README.md"
FAST = {"batch_size": 50, "epochs": 1}


def _frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.normal(40, 10, n),
        "job": rng.choice(["clerk", "engineer", "nurse"], n),
        "group": rng.choice(["a", "b"], n),
    })
    score = 0.1 * (frame.age - 40) + (frame.job == "engineer") - 0.3
    frame["income"] = rng.random(n) < 1 / (1 + np.exp(-score))
    return frame


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _frame()


@pytest.fixture(scope="module")
def dp_fit(frame):
    return dpminimax.fit("dp_sgd", frame, y="income", s="group", epsilon=1.0, delta=1e-5,
                         seeds=[0, 1], **FAST)


def test_readme_example_runs(capsys):
    section = README.read_text().split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "README's Python API section has no ```python block"
    exec(compile(blocks[0], str(README), "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "test_accuracy" in out and "epsilon_spent" in out and "DpEvent" in out


def test_import_stays_cheap():
    code = ("import sys, dpminimax; heavy = {'torch', 'pandas', 'numpy'} & set(sys.modules); "
            "assert not heavy, heavy; assert 'fit' in dir(dpminimax)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_arrays_and_dataframe_give_the_same_runs(frame, dp_fit):
    x = dp_fit.encoder.transform(frame)
    assert x.shape == (len(frame), 1 + 3)  # age z-scored, job one-hot; label and group dropped
    assert list(dp_fit.data.feature_names) == ["age", "job=clerk", "job=engineer", "job=nurse"]
    arrays = dpminimax.fit("dp_sgd", x, frame["income"].to_numpy(), frame["group"].to_numpy(),
                           epsilon=1.0, delta=1e-5, seeds=[0, 1], **FAST)
    np.testing.assert_array_equal(arrays.data.x_train, dp_fit.data.x_train)
    columns = [c for c in dp_fit.metrics.columns if c != "dataset"]
    pd.testing.assert_frame_equal(arrays.metrics[columns], dp_fit.metrics[columns])
    np.testing.assert_array_equal(arrays.predict(x), dp_fit.predict(frame))


def test_unknown_parameter_is_an_error_naming_it(frame):
    with pytest.raises(UnknownParameterError, match="'learning_rate'"):
        dpminimax.fit("dp_sgd", frame, y="income", epsilon=1.0, delta=1e-5,
                      learning_rate=0.1)


def test_prediction_shapes_and_labels(frame, dp_fit):
    new = frame.head(7)
    assert dp_fit.predict(new).shape == (2, 7)
    assert dp_fit.predict(new, run=1).shape == (7,)
    assert set(dp_fit.predict(new).ravel()) <= {False, True}  # the label's own values
    proba = dp_fit.predict_proba(new)
    assert proba.shape == (2, 7, 2)
    np.testing.assert_allclose(proba.sum(axis=-1), 1.0, rtol=1e-6)
    one = dpminimax.fit("dp_sgd_nonprivate", frame, y="income", **FAST)
    assert one.predict(new).shape == (7,) and one.predict_proba(new).shape == (7, 2)
    with pytest.raises(ValueError, match="levels not seen in training"):
        dp_fit.predict(new.assign(job="pilot"))


def test_metrics_are_the_workflow_run_table(frame, dp_fit):
    table = dp_fit.metrics
    assert len(table) == 2 and table["seed"].tolist() == [0, 1]
    assert {"test_accuracy", "dp_violation", "train_accuracy", "train_loss", "p_lr",
            "p_noise_multiplier", "epsilon_spent", "accountant"} <= set(table.columns)
    assert "paper" not in table.columns and "experiment" not in table.columns
    assert dp_fit.data.meta["n_test"] == 100  # the default quarter held out


def test_accounting_within_target_and_inf_without_privacy(frame, dp_fit):
    for record in dp_fit.accounting:
        assert record.epsilon <= 1.0 + 1e-9 and record.delta == 1e-5
        assert record.accountant == "rdp" and record.neighboring_relation
        assert record.event is not None
    assert (dp_fit.metrics["epsilon_spent"] <= 1.0 + 1e-9).all()
    raco = dpminimax.fit("racodp", frame, y="income", s="group", epsilon=1.0, delta=1e-5,
                         batch_size=50, max_steps=20)
    assert raco.accounting[0].epsilon <= 1.0 + 1e-9
    plain = dpminimax.fit("dp_sgd_nonprivate", frame, y="income", s="group", **FAST)
    assert math.isinf(plain.accounting[0].epsilon)
    assert isinstance(plain.accounting[0].event, NonPrivateDpEvent)
    with pytest.raises(ValueError, match="not private"):
        dpminimax.fit("dp_sgd_nonprivate", frame, y="income", epsilon=1.0, **FAST)
    with pytest.raises(ValueError, match="give epsilon and delta"):
        dpminimax.fit("dp_sgd", frame, y="income", **FAST)


def test_epsilon_given_as_its_label_trains_the_same(frame, dp_fit):
    """``epsilon="1"`` is parsed by the one epsilon type into the number 1.0: same runs, same
    accounting; ``"inf"`` is a non-private method's; a bad one is refused in one line."""
    labelled = dpminimax.fit("dp_sgd", frame, y="income", s="group", epsilon="1", delta=1e-5,
                             seeds=[0, 1], **FAST)
    pd.testing.assert_frame_equal(labelled.metrics, dp_fit.metrics)
    plain = dpminimax.fit("dp_sgd_nonprivate", frame, y="income", s="group", epsilon="inf",
                          **FAST)
    assert math.isinf(plain.accounting[0].epsilon)
    with pytest.raises(ValueError, match=r"^epsilon: epsilon is not a number: 'one'$"):
        dpminimax.fit("dp_sgd", frame, y="income", epsilon="one", delta=1e-5, **FAST)
    with pytest.raises(ValueError, match=r"^epsilon: epsilon must be > 0, got -1$"):
        dpminimax.fit("dp_sgd", frame, y="income", epsilon=-1, delta=1e-5, **FAST)
    with pytest.raises(ValueError, match="epsilon must be positive and finite, got inf"):
        dpminimax.fit("dp_sgd", frame, y="income", epsilon="inf", delta=1e-5, **FAST)


def test_same_seed_same_result(frame, dp_fit):
    again = dpminimax.fit("dp_sgd", frame, y="income", s="group", epsilon=1.0, delta=1e-5,
                          seeds=[0, 1], **FAST)
    pd.testing.assert_frame_equal(again.metrics, dp_fit.metrics)
    for key, value in dp_fit.model.fit_result.state.items():
        assert torch.equal(again.model.fit_result.state[key], value)
    other = dpminimax.fit("dp_sgd", frame, y="income", s="group", epsilon=1.0, delta=1e-5,
                          seeds=[2], **FAST)
    assert not torch.equal(other.model.fit_result.state["weight"][0],
                           dp_fit.model.fit_result.state["weight"][0])


def test_sensitive_attribute_only_where_needed(frame):
    with pytest.raises(ValueError, match="racodp.*pass s"):
        dpminimax.fit("racodp", frame, y="income", epsilon=1.0, delta=1e-5)
    blind = dpminimax.fit("dp_sgd_nonprivate", frame, y="income", **FAST)
    assert blind.metrics[["dp_violation", "eo_violation"]].isna().all().all()
    assert "group=a" in blind.data.feature_names  # not given as s: an ordinary feature
    listed = dpminimax.methods()
    assert set(listed.index) == set(METHODS)
    classifiers = listed[listed["task"] == "fair_classification"]
    assert set(classifiers.index[~classifiers["needs_sensitive"]]) == {"dp_sgd",
                                                                       "dp_sgd_nonprivate"}
    with pytest.raises(TypeError, match="task 'synthetic_optimization'.*problem name"):
        dpminimax.fit("dp_sgda", frame, y="income", epsilon=1.0, delta=1e-5)


def test_held_out_test_data(frame):
    train, test = frame.iloc[:300], frame.iloc[300:]
    split = dpminimax.fit("dp_sgd_nonprivate", train, y="income", s="group", test=test, **FAST)
    assert (split.data.meta["n_train"], split.data.meta["n_test"]) == (300, 100)
    x = split.encoder.transform(frame)
    tupled = dpminimax.fit("dp_sgd_nonprivate", x[:300], train["income"].to_numpy(),
                           train["group"].to_numpy(),
                           test=(x[300:], test["income"].to_numpy(), test["group"].to_numpy()),
                           **FAST)
    assert tupled.metrics["test_accuracy"].tolist() == split.metrics["test_accuracy"].tolist()
