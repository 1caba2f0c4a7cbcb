"""DP-SGD and non-private SGD on small synthetic problems with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from dpminimax.algorithms import expand_runs, get_method
from dpminimax.data import load_dataset
from dpminimax.privacy import dpsgd_event, epsilon

DEVICE = torch.device("cpu")


@pytest.fixture(scope="module")
def data():
    return load_dataset("synthetic-fair", max_rows=1500)


def _logistic_optimum(x, y):
    """Unregularised logistic-regression minimiser by L-BFGS (the known answer)."""
    xb = np.hstack([x, np.ones((len(x), 1))]).astype(np.float64)

    def loss_and_grad(w):
        z = xb @ w
        loss = np.mean(np.logaddexp(0.0, z) - y * z)
        grad = xb.T @ (1.0 / (1.0 + np.exp(-z)) - y) / len(y)
        return loss, grad

    result = minimize(loss_and_grad, np.zeros(xb.shape[1]), jac=True, method="L-BFGS-B",
                      options={"gtol": 1e-10, "maxiter": 10_000})
    return result.fun


def test_nonprivate_full_batch_sgd_reaches_the_logistic_optimum(data):
    runs = expand_runs([0], math.inf, 1e-5, {"lr": 2.0, "batch_size": len(data.y_train),
                                              "epochs": 600})
    fit = get_method("dp_sgd_nonprivate").fit(data, runs, DEVICE)
    losses = fit.model.losses(fit.state, torch.as_tensor(data.x_train),
                              torch.as_tensor(data.y_train))
    optimum = _logistic_optimum(data.x_train, data.y_train.astype(np.float64))
    assert float(losses.mean()) == pytest.approx(optimum, abs=2e-3)


def test_dp_sgd_spends_at_most_its_budget_and_records_the_event(data):
    runs = expand_runs([0, 1], 1.0, 1e-5, {"lr": 1.0, "clip": 1.0, "batch_size": 128,
                                            "epochs": 2})
    fit = get_method("dp_sgd").fit(data, runs, DEVICE)
    for record, params in zip(fit.accounting, fit.resolved_params, strict=True):
        assert record["epsilon"] <= 1.0
        assert record["epsilon"] == pytest.approx(1.0, rel=0.02)
        recomputed = epsilon(dpsgd_event(params["sampling_rate"], params["noise_multiplier"],
                                         params["steps"]), 1e-5, "rdp")
        assert recomputed == pytest.approx(record["epsilon"])
        assert params["steps"] == math.ceil(2 / params["sampling_rate"])


def test_dp_sgd_with_a_large_budget_approaches_nonprivate_accuracy(data):
    common = {"lr": 1.0, "batch_size": 256, "epochs": 10}
    private = get_method("dp_sgd").fit(
        data, expand_runs([0], 1e4, 1e-5, {**common, "clip": 100.0}), DEVICE)
    plain = get_method("dp_sgd_nonprivate").fit(data, expand_runs([0], math.inf, 1e-5, common),
                                                DEVICE)
    x, y = torch.as_tensor(data.x_test), torch.as_tensor(data.y_test)
    acc_private = (private.model.predict(private.state, x) == y).float().mean()
    acc_plain = (plain.model.predict(plain.state, x) == y).float().mean()
    assert float(acc_private) == pytest.approx(float(acc_plain), abs=0.02)


def test_batched_runs_are_bit_identical_to_runs_trained_alone(data):
    grid = {"lr": [0.5, 1.0], "clip": 1.0, "batch_size": 128, "epochs": 1}
    runs = expand_runs([3, 4], 2.0, 1e-5, grid)
    method = get_method("dp_sgd")
    together = method.fit(data, runs, DEVICE)
    for r, run in enumerate(runs):
        alone = method.fit(data, [run], DEVICE)
        for key in together.state:
            assert torch.equal(together.state[key][r], alone.state[key][0]), (run, key)


def test_nonprivate_refuses_a_finite_epsilon(data):
    with pytest.raises(ValueError, match="inf"):
        get_method("dp_sgd_nonprivate").fit(data, expand_runs([0], 1.0, 1e-5, {"epochs": 1}),
                                            DEVICE)


def test_batch_size_must_be_shared_within_a_job(data):
    runs = expand_runs([0], 1.0, 1e-5, {"batch_size": [64, 128], "epochs": 1})
    with pytest.raises(ValueError, match="batch_size"):
        get_method("dp_sgd").fit(data, runs, DEVICE)


def test_unknown_parameter_names_the_parameter():
    with pytest.raises(ValueError, match="lrr"):
        get_method("dp_sgd").resolve({"lrr": 1.0})
