"""RaCO-DP (Algorithm 1) on a network: the same program as for logistic regression, through
:meth:`dpminimax.models.network.BatchedNetwork.private_step`."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.fair.racodp import NonPrivateSgda, RacoDp
from dpminimax.data import PreparedDataset

CPU = torch.device("cpu")


def _images(n: int = 256, seed: int = 0) -> PreparedDataset:
    """1x28x28 images whose label (a bright patch) equals the group 90% of the time, so an
    accurate classifier has a demographic-parity gap near 0.8."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.9, s, 1 - s)
    x = 0.3 * rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
    x[:, 0, 4:12, 4:12] += y[:, None, None]
    return PreparedDataset(name="patches", kind="image", x_train=x, y_train=y, s_train=s,
                           x_test=x, y_test=y, s_test=s, feature_names=[],
                           label_names=["0", "1"], group_names=["a", "b"])


def _gap(predicted: np.ndarray, s: np.ndarray) -> float:
    return abs(predicted[s == 1].mean() - predicted[s == 0].mean())


@pytest.mark.slow
def test_nonprivate_sgda_on_a_cnn_meets_a_demographic_parity_constraint():
    data = _images()
    params = {"model": "small_cnn", "batch_size": 64, "max_steps": 150, "lr": 0.5,
              "lr_dual": 2.0}
    runs = [RunSpec(0, math.inf, 1e-5, {**params, "gamma": gamma}) for gamma in (1.0, 0.05)]
    method = NonPrivateSgda()
    fit = method.fit(data, runs, CPU)
    predicted = fit.model.predict(fit.state, torch.as_tensor(data.x_train)).numpy()
    unconstrained, constrained = (_gap(p, data.s_train) for p in predicted)
    assert (predicted[0] == data.y_train).mean() > 0.95 and unconstrained > 0.6
    assert constrained <= 0.05 + 1e-9
    violations = method.extra_metrics(fit, data, CPU)
    assert violations[1]["train_max_constraint_violation"] <= 1e-9


def test_private_racodp_on_a_cnn_accounts_like_the_linear_model():
    """The step count and the sound epsilon depend on (q, sigma, b, T) only, not on the model."""
    data = _images(n=128)
    params = {"batch_size": 16, "max_steps": 4, "noise_multiplier": 2.0,
              "histogram_scale": 4.0, "gamma": 0.1}
    method = RacoDp()
    fit = method.fit(data, [RunSpec(s, 2.0, 1e-5, {**params, "model": "small_cnn"})
                            for s in (0, 1)], CPU)
    tabular = PreparedDataset(**{**data.__dict__, "kind": "tabular",
                                 "x_train": data.x_train.reshape(128, -1),
                                 "x_test": data.x_test.reshape(128, -1)})
    linear = method.fit(tabular, [RunSpec(0, 2.0, 1e-5, params)], CPU)
    assert fit.resolved_params[0]["steps"] == linear.resolved_params[0]["steps"] == 4
    assert fit.accounting[0]["epsilon"] == pytest.approx(linear.accounting[0]["epsilon"])
    assert fit.accounting[0]["epsilon"] <= 2.0
    # the two seeds are different runs, each moved away from its initialisation
    init = fit.model.init_state(2, CPU, seeds=[0, 1])
    for r in range(2):
        assert not torch.equal(fit.state["0.weight"][r], init["0.weight"][r])
    assert not torch.equal(fit.state["0.weight"][0], fit.state["0.weight"][1])


def test_a_network_on_tabular_data_is_refused_naming_the_parameter():
    data = _images(n=8)
    tabular = PreparedDataset(**{**data.__dict__, "kind": "tabular",
                                 "x_train": data.x_train.reshape(8, -1),
                                 "x_test": data.x_test.reshape(8, -1)})
    with pytest.raises(ValueError, match="model: logistic_regression"):
        RacoDp().fit(tabular, [RunSpec(0, 1.0, 1e-5, {"model": "small_cnn"})], CPU)
