"""``dpminimax.fit`` runs EVERY registered method on the input its task takes (issue 40 item
14): a DataFrame for the data methods (fair and KL-DRO classification), a problem name for the
problem methods (synthetic and bilevel); input of the other kind is refused in one line that
names the call that works. Tiny sizes: the whole file runs in well under a minute on one core.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import dpminimax
from dpminimax.algorithms import METHODS
from dpminimax.estimator import needs_sensitive

#: Small values of whichever of these parameters a method has (the rest keep their defaults).
TINY = {"batch_size": 50, "epochs": 1, "max_steps": 20, "rounds": 3, "oracle_steps": 3,
        "outer_steps": 10, "inner_steps": 5}
DATA_TASKS = {"fair_classification", "dro_classification"}
PROBLEM_TASKS = {"synthetic_optimization", "bilevel_optimization"}
#: A metric every run of the task reports.
TASK_METRIC = {"fair_classification": "test_accuracy", "dro_classification": "test_auc"}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 240
    data = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                         "job": rng.choice(["x", "y", "z"], n), "group": rng.choice(["m", "f"], n)})
    data["label"] = data["a"] + 0.5 * (data["job"] == "x") + rng.normal(size=n) > 0.6
    return data


def _privacy(method) -> dict:
    return {"epsilon": 2.0, "delta": 1e-5} if method.private else {}


def _tiny(method) -> dict:
    return {k: v for k, v in TINY.items() if k in method.parameters}


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message, message
    return message


def test_every_method_has_a_route():
    tasks = {method.task.name for method in METHODS.values()}
    assert tasks <= DATA_TASKS | PROBLEM_TASKS, tasks - DATA_TASKS - PROBLEM_TASKS
    assert len(METHODS) > 50


@pytest.mark.parametrize("name", sorted(METHODS))
def test_fit_runs_the_method_on_its_kind_of_input(name, frame):
    method = METHODS[name]
    kwargs = {**_privacy(method), **_tiny(method), "seeds": [3]}
    if method.task.name in DATA_TASKS:
        s = "group" if needs_sensitive(name) else None
        result = dpminimax.fit(name, frame, y="label", s=s, **kwargs)
        assert result.problem is None and result.data.meta["n_train"] == 180
        assert result.predict(frame.head(7)).shape == (7,)
        assert set(np.unique(result.predict(frame))) <= {False, True}
        metric = TASK_METRIC[method.task.name]
        assert result.metrics[metric].between(0, 1).all()
    else:
        problem = method.parameters["problem"]
        result = dpminimax.fit(name, problem, **kwargs)
        assert result.problem == problem and result.data is None and result.model is None
        assert (result.metrics["p_problem"] == problem).all()
        with pytest.raises(TypeError, match="nothing to predict"):
            result.predict(np.zeros((1, 2)))
    row = result.metrics.iloc[0]
    assert len(result.metrics) == len(result.accounting) == 1 and row["seed"] == 3
    assert row["method"] == name and result.method == name
    assert len(result.fits) >= 1 and result.fits[0].runs[0].seed == 3
    spent = result.accounting[0].epsilon
    assert spent == row["epsilon_spent"]
    if method.private:
        assert spent <= 2.0 * (1 + 1e-9)
    else:
        assert math.isinf(spent)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_input_of_the_other_kind_is_refused_in_one_line_naming_the_route(name, frame):
    method = METHODS[name]
    if method.task.name in DATA_TASKS:
        with pytest.raises(TypeError) as err:
            dpminimax.fit(name, "g1_quadratic_game", **_privacy(method))
        assert f"dpminimax.fit({name!r}, frame, y=" in _one_line(err)
        with pytest.raises(TypeError) as err:
            dpminimax.fit(name, **_privacy(method))
        assert "got no data" in _one_line(err)
    else:
        route = f"dpminimax.fit({name!r}, {method.parameters['problem']!r}"
        with pytest.raises(TypeError) as err:
            dpminimax.fit(name, frame, y="label", **_privacy(method))
        assert route in _one_line(err) and "DataFrame" in str(err.value)
        with pytest.raises(TypeError) as err:
            dpminimax.fit(name, None, y="label", **_privacy(method))
        assert route in _one_line(err) and "takes no y" in str(err.value)


def test_problem_given_by_name_is_the_one_solved():
    result = dpminimax.fit("dp_sgda_nonprivate", "g2_bilinear_game", seeds=[0])
    assert result.metrics["p_problem"].tolist() == ["g2_bilinear_game"]
    assert (dpminimax.fit("dp_sgda_nonprivate", seeds=[0]).problem
            == METHODS["dp_sgda_nonprivate"].parameters["problem"])
    with pytest.raises(ValueError, match="problem given twice"):
        dpminimax.fit("dp_sgda_nonprivate", "g2_bilinear_game", problem="g1_quadratic_game")
    with pytest.raises(ValueError, match="problem"):
        dpminimax.fit("dp_sgda_nonprivate", "no_such_problem")
