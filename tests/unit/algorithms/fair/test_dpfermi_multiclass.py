"""DP-FERMI beyond binary logistic regression: K-class softmax predictions (l = K, a k x K W)
with multinomial logistic regression, and networks through ``BatchedNetwork.private_step``
(UTK-Face, Fig. 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dpminimax.algorithms.base import RunSpec, expand_runs
from dpminimax.algorithms.fair.dpfermi import DpFermi, DpFermiCode, DpFermiPaper, NonPrivateFermi
from dpminimax.algorithms.fair.ermi import ermi, psi
from dpminimax.data import PreparedDataset

CPU = torch.device("cpu")


def _three_classes(n: int = 1200, seed: int = 0) -> PreparedDataset:
    """Three classes whose first feature is shifted by the (binary) group, so an unfair
    classifier predicts the classes at group-dependent rates."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    x[:, 0] += 1.5 * s
    score = x[:, 0] + 0.7 * x[:, 1] + 0.4 * rng.standard_normal(n)
    y = np.digitize(score, [0.0, 1.2]).astype(np.int64)
    h = n // 2
    return PreparedDataset(
        name="three", kind="tabular", x_train=x[:h], y_train=y[:h], s_train=s[:h],
        x_test=x[h:], y_test=y[h:], s_test=s[h:], feature_names=["a", "b", "c"],
        label_names=["low", "mid", "high"], group_names=["g0", "g1"])


def _program(method, data, grid):
    return method.build(data, expand_runs([0], math.inf, 1e-5, grid), CPU)[0]


@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds"])
def test_multiclass_step_is_the_gradient_step_of_cross_entropy_plus_lam_psi(fairness):
    """Full batch, no noise: theta - lr grad[mean CE + lam mean psi(softmax)] and
    Pi(W + lr_w lam grad_W mean psi), psi with a k x K W (EO: one W_y and P_{S|Y=y} per label)."""
    data, lam, lr, lr_w = _three_classes(), 0.6, 0.3, 0.4
    program = _program(NonPrivateFermi(), data, {"lam": lam, "lr": lr, "lr_w": lr_w,
                                                  "fairness": fairness, "w_radius": 100.0})
    assert program.w.shape == (1, 3 if fairness == "equalized_odds" else 1, 2, 3)
    generator = torch.Generator().manual_seed(0)
    for key, value in program.state.items():
        program.state[key] = 0.5 * torch.randn(value.shape, generator=generator)
    program.w = 0.5 * torch.randn(program.w.shape, generator=generator)
    theta = {k: v.clone().requires_grad_(True) for k, v in program.state.items()}
    w = program.w.clone().requires_grad_(True)
    x, y, s = (torch.as_tensor(a) for a in (data.x_train, data.y_train, data.s_train))
    logits = x @ theta["weight"][0].T + theta["bias"][0]
    f = torch.softmax(logits, dim=-1).unsqueeze(0)
    s_hot = F.one_hot(s, 2).float()
    cells = y if fairness == "equalized_odds" else torch.zeros_like(y)
    fair = torch.zeros(len(y))
    for cell in cells.unique():
        member = cells == cell
        fair = torch.where(member, psi(f, s_hot, w[:, int(cell)], s_hot[member].mean(dim=0))[0],
                           fair)
    (F.cross_entropy(logits, y) + lam * fair.mean()).backward()
    n = len(y)
    program.step_on(torch.arange(n).unsqueeze(0), torch.ones(1, n, dtype=torch.bool), float(n))
    for key, value in theta.items():
        torch.testing.assert_close(program.state[key], value.detach() - lr * value.grad,
                                   rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(program.w, w.detach() + lr_w * w.grad, rtol=1e-4, atol=1e-6)


def test_large_lambda_reduces_the_multiclass_ermi():
    """Plain multinomial LR predicts the classes at group-dependent rates (ERMI of the hard
    test predictions well above 0); lam = 4 at least halves it, accuracy stays well above
    chance (1/3)."""
    data = _three_classes()
    runs = expand_runs([0, 1], math.inf, 1e-5, {"lam": [0.0, 4.0], "lr": 0.5, "lr_w": 0.5,
                                                 "batch_size": 100, "epochs": 15})
    fit = NonPrivateFermi().fit(data, runs, CPU)
    predicted = fit.model.predict(fit.state, torch.as_tensor(data.x_test))
    hard = F.one_hot(predicted, 3).float()
    values = ermi(hard, F.one_hot(torch.as_tensor(data.s_test), 2).float())
    by_lam = {lam: values[[r for r, run in enumerate(runs) if run.params["lam"] == lam]].mean()
              for lam in (0.0, 4.0)}
    accuracy = (predicted.numpy() == data.y_test).mean(axis=1)
    assert by_lam[0.0] > 0.15
    assert by_lam[4.0] < 0.5 * by_lam[0.0]
    assert accuracy.min() > 0.5


def _images(n: int = 96, seed: int = 0) -> PreparedDataset:
    """1x28x28 images, three classes (a bright patch in one of three places), two groups."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    y = rng.integers(0, 3, n)
    x = 0.3 * rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
    for label in range(3):
        x[y == label, 0, 2 + 8 * label:8 + 8 * label, 4:12] += 1.0
    return PreparedDataset(name="patches", kind="image", x_train=x, y_train=y, s_train=s,
                           x_test=x, y_test=y, s_test=s, feature_names=[],
                           label_names=["0", "1", "2"], group_names=["a", "b"])


def test_private_dpfermi_trains_a_network_and_accounts_like_the_linear_model():
    """Example-level DP-FERMI on a small CNN: the parameters move and stay finite, and the
    calibrated sigma and epsilon depend on (q, T, count noise) only, not on the model."""
    data = _images()
    params = {"batch_size": 16, "epochs": 1, "lam": 2.0, "w_radius": 1.0, "clip": 1.0,
              "count_noise": 20.0}
    runs = [RunSpec(seed, 4.0, 1e-5, {**params, "model": "small_cnn"}) for seed in (0, 1)]
    method = DpFermi()
    program, _, _, _, schedule = method.build(data, runs, CPU)
    before = {k: v.clone() for k, v in program.state.items()}
    fit = method.fit(data, runs, CPU)
    assert all(not torch.equal(fit.state[k], before[k]) for k in before)
    assert all(torch.isfinite(v).all() for v in fit.state.values())
    assert fit.model.logits(fit.state, torch.as_tensor(data.x_test)).shape == (2, 96, 3)
    tabular = PreparedDataset(**{**data.__dict__, "kind": "tabular",
                                 "x_train": data.x_train.reshape(96, -1),
                                 "x_test": data.x_test.reshape(96, -1)})
    linear = method.fit(tabular, [RunSpec(0, 4.0, 1e-5, params)], CPU)
    assert fit.accounting[0]["epsilon"] == linear.accounting[0]["epsilon"] <= 4.0
    sigma = [f.resolved_params[0]["noise_multiplier"] for f in (fit, linear)]
    assert sigma[0] == sigma[1]
    assert fit.resolved_params[0]["steps"] == schedule.steps == math.ceil(1 / (16 / 96))


def test_nonprivate_fermi_on_a_network_learns_the_classes():
    data = _images(n=192)
    fit = NonPrivateFermi().fit(data, [RunSpec(0, math.inf, 1e-5, {
        "model": "small_cnn", "batch_size": 32, "epochs": 6, "lam": 0.1, "lr": 0.5})], CPU)
    predicted = fit.model.predict(fit.state, torch.as_tensor(data.x_test))[0].numpy()
    assert (predicted == data.y_test).mean() > 0.9


@pytest.mark.parametrize("method, message", [
    (DpFermiPaper(), "sensitive_attribute.*logistic regression on tabular data only"),
    (DpFermiCode(), "logistic-regression model on tabular features"),
])
def test_paper_privacy_modes_refuse_what_their_proofs_do_not_cover(method, message):
    images = _images()
    with pytest.raises(ValueError, match=message):
        method.fit(images, [RunSpec(0, 4.0, 1e-5, {"model": "small_cnn"})], CPU)


def test_code_faithful_refuses_more_than_two_classes():
    with pytest.raises(ValueError, match="binary classifier"):
        DpFermiCode().fit(_three_classes(), [RunSpec(0, 4.0, 1e-5, {})], CPU)


def test_a_network_on_tabular_data_names_the_parameter():
    with pytest.raises(ValueError, match="model: logistic_regression"):
        DpFermi().fit(_three_classes(), [RunSpec(0, 4.0, 1e-5, {"model": "small_cnn"})], CPU)
