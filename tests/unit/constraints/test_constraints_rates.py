"""Constraint values Γ_j (eq. 6), Γ^post of a histogram (eq. 12) and primal weights (eq. 10)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.constraints import (
    EmptyLocalDatasetWarning,
    demographic_parity,
    equalized_odds,
    false_negative_rate,
)
from dpminimax.metrics import demographic_parity_violation, equalized_odds_violation

ignore_empty = pytest.mark.filterwarnings("ignore::dpminimax.constraints.EmptyLocalDatasetWarning")


def _mean(values):
    """Brute-force P_k(D_l): the mean over a list, 0 for an empty local dataset."""
    return sum(values) / len(values) if values else 0.0


def _brute_force(kind, probs, y, s, num_groups, num_classes):
    """Table 1 formulas evaluated example by example, in the builders' constraint order."""
    n, groups, classes = len(y), range(num_groups), range(num_classes)
    rate = lambda k, member: _mean([probs[i, k] for i in range(n) if member(i)])  # noqa: E731
    if kind == "dp":
        return [
            rate(k, lambda i, z=z: s[i] == z) - rate(k, lambda i, z=z: s[i] != z)
            for z in groups
            for k in classes
        ]
    if kind == "eo":
        return [
            rate(k, lambda i, a=a, z=z: y[i] == a and s[i] == z)
            - rate(k, lambda i, a=a, z=z: y[i] == a and s[i] != z)
            for a in classes
            for z in groups
            for k in classes
        ]
    return [sum(rate(k, lambda i: y[i] == 1) for k in classes if k != 1)]  # FNR, class 1


def _build(kind, num_groups, num_classes):
    if kind == "dp":
        return demographic_parity(num_groups, num_classes, gamma=0.1)
    if kind == "eo":
        return equalized_odds(num_groups, num_classes, gamma=0.1)
    return false_negative_rate(num_classes, gamma=0.1, num_groups=num_groups)


def _data(seed, n, num_groups, num_classes, hard):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, n)
    s = rng.integers(0, num_groups, n)
    probs = rng.dirichlet(np.ones(num_classes), n)
    if hard:
        probs = np.eye(num_classes)[probs.argmax(1)]
    return y, s, probs


def _exact_histogram(constraints, probs, cells):
    """Eq. (8) without noise."""
    histogram = np.zeros((constraints.num_cells, constraints.num_classes))
    np.add.at(histogram, cells, probs)
    return histogram


data_shapes = {
    "kind": st.sampled_from(["dp", "eo", "fnr"]),
    "seed": st.integers(0, 2**32 - 1),
    "n": st.integers(0, 40),
    "num_groups": st.integers(2, 4),
    "num_classes": st.integers(2, 4),
    "hard": st.booleans(),
}


@ignore_empty
@settings(max_examples=80, deadline=None)
@given(**data_shapes)
def test_rates_match_table1_by_brute_force(kind, seed, n, num_groups, num_classes, hard):
    y, s, probs = _data(seed, n, num_groups, num_classes, hard)
    constraints = _build(kind, num_groups, num_classes)
    cells = constraints.cells(y, s)
    expected = _brute_force(kind, probs, y, s, num_groups, num_classes)
    np.testing.assert_allclose(constraints.rates(probs, cells), expected, atol=1e-12)
    histogram = _exact_histogram(constraints, probs, cells)
    np.testing.assert_allclose(constraints.histogram_rates(histogram), expected, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 60))
def test_hard_rates_give_the_fairness_metrics(seed, n):
    """Binary Z and K: max_j Γ_j on one-hot predictions is the DP (EO) violation."""
    y, s, _ = _data(seed, n, 2, 2, hard=True)
    y[:4], s[:4] = [0, 0, 1, 1], [0, 1, 0, 1]  # every (y, z) cell is non-empty
    y_pred = np.random.default_rng(seed + 1).integers(0, 2, n)
    one_hot = np.eye(2)[y_pred]
    dp, eo = demographic_parity(2, gamma=0.0), equalized_odds(2, gamma=0.0)
    dp_violation = demographic_parity_violation(y_pred, s, classes=[0, 1])
    eo_violation = equalized_odds_violation(y_pred, y, s)
    assert dp.rates(one_hot, dp.cells(y, s)).max() == pytest.approx(dp_violation, abs=1e-12)
    assert eo.rates(one_hot, eo.cells(y, s)).max() == pytest.approx(eo_violation, abs=1e-12)
    gap = np.mean(y_pred[s == 1] == 1) - np.mean(y_pred[s != 1] == 1)
    j = dp.names.index("DP[z=1,k=1]")
    assert dp.rates(one_hot, dp.cells(y, s))[j] == pytest.approx(gap, abs=1e-12)


def test_fnr_on_hard_predictions_is_pr_yhat0_given_y1():
    y = np.array([1, 1, 1, 1, 0, 0])
    y_pred = np.array([0, 1, 1, 1, 0, 0])
    fnr = false_negative_rate(gamma=0.1)
    assert fnr.rates(np.eye(2)[y_pred], fnr.cells(y, None)) == pytest.approx([0.25])


def test_empty_local_dataset_contributes_zero_and_is_reported():
    dp = demographic_parity(3, gamma=0.1, group_names=["a", "b", "c"])
    s = np.array([0, 0, 1])  # group c has no example
    probs = np.array([[0.2, 0.8], [0.4, 0.6], [1.0, 0.0]])
    with pytest.warns(EmptyLocalDatasetWarning, match=r"DP\[z=c,k=0\]"):
        values = dp.rates(probs, dp.cells(None, s))
    assert np.isfinite(values).all()
    assert values[dp.names.index("DP[z=c,k=1]")] == pytest.approx(-(0.8 + 0.6 + 0.0) / 3)


def test_histogram_rates_follow_the_dp_dual_formula_with_guard():
    """gλ_{z,k} = Ĥ[z,k]/N̂_z − Σ_{z'≠z} Ĥ[z',k]/N̂_{¬z}, with N̂ guarded at 1."""
    noisy = np.array([[3.5, 1.0], [-2.0, 2.5], [0.2, -0.1]])
    dp = demographic_parity(3, gamma=0.1)
    totals = noisy.sum(1)
    expected = [
        noisy[z, k] / max(totals[z], 1.0)
        - np.delete(noisy, z, 0)[:, k].sum() / max(np.delete(totals, z).sum(), 1.0)
        for z in range(3)
        for k in range(2)
    ]
    np.testing.assert_allclose(dp.histogram_rates(noisy), expected)
    fnr = false_negative_rate(gamma=0.1)
    label_histogram = np.array([[4.0, 1.0], [3.0, 9.0]])
    assert fnr.histogram_rates(label_histogram) == pytest.approx([3.0 / 12.0])


def test_cell_weights_follow_the_dp_primal_formula():
    """For x in group g, w_x[k] = λ_{g,k}/N̂_g − Σ_{z≠g} λ_{z,k}/N̂_{¬z}."""
    rng = np.random.default_rng(0)
    histogram = rng.uniform(1.0, 5.0, (3, 2))
    lam = rng.uniform(0.0, 1.0, 6)
    dp = demographic_parity(3, gamma=0.1)
    size = histogram.sum(1)
    lam_zk = lam.reshape(3, 2)  # z-major order
    expected = np.array(
        [
            lam_zk[g] / size[g]
            - sum(lam_zk[z] / (size.sum() - size[z]) for z in range(3) if z != g)
            for g in range(3)
        ]
    )
    np.testing.assert_allclose(dp.cell_weights(lam, histogram), expected)


@settings(max_examples=30, deadline=None)
@given(**data_shapes)
def test_cell_weights_are_the_gradient_of_lambda_gamma_post(
    kind, seed, n, num_groups, num_classes, hard
):
    """Σ_x Σ_k W[cell(x), k] p_x[k] = Σ_j λ_j Γ^post_j(H) on the exact histogram H (eq. 10)."""
    y, s, probs = _data(seed, n, num_groups, num_classes, hard)
    constraints = _build(kind, num_groups, num_classes)
    cells = constraints.cells(y, s)
    histogram = _exact_histogram(constraints, probs, cells)
    lam = np.random.default_rng(seed).uniform(0, 2, constraints.num_constraints)
    weights = constraints.cell_weights(lam, histogram)
    per_example = (weights[cells] * probs).sum()
    assert per_example == pytest.approx(lam @ constraints.histogram_rates(histogram), abs=1e-9)


@ignore_empty
def test_torch_and_numpy_inputs_agree_and_are_differentiable():
    y, s, probs = _data(3, 50, 3, 3, hard=False)
    eo = equalized_odds(3, 3, gamma=0.1)
    cells_np = eo.cells(y, s)
    cells_t = eo.cells(torch.from_numpy(y), torch.from_numpy(s))
    assert isinstance(cells_t, torch.Tensor) and cells_t.dtype == torch.int64
    assert isinstance(cells_np, np.ndarray) and cells_np.dtype == np.int64
    np.testing.assert_array_equal(cells_t.numpy(), cells_np)
    logits = torch.randn(50, 3, dtype=torch.float64, requires_grad=True)
    soft = torch.softmax(logits, dim=1)
    values = eo.rates(soft, cells_t)
    assert isinstance(values, torch.Tensor) and values.shape == (27,)  # K² |Z|
    np.testing.assert_allclose(values.detach().numpy(), eo.rates(soft.detach().numpy(), cells_np))
    values.sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    histogram = _exact_histogram(eo, probs, cells_np)
    np.testing.assert_allclose(
        eo.histogram_rates(torch.from_numpy(histogram)).numpy(), eo.histogram_rates(histogram)
    )
    lam = np.ones(27)
    np.testing.assert_allclose(
        eo.cell_weights(torch.from_numpy(lam), torch.from_numpy(histogram)).numpy(),
        eo.cell_weights(lam, histogram),
    )
    single = eo.rates(torch.from_numpy(probs).float(), cells_t)
    assert single.dtype == torch.float32


def test_stacked_inputs_are_evaluated_per_replicate():
    y, s, _ = _data(4, 30, 2, 2, hard=False)
    dp = demographic_parity(2, gamma=0.1)
    cells = dp.cells(y, s)
    stacked = np.random.default_rng(5).dirichlet([1, 1], (3, 30))
    rates = dp.rates(stacked, cells)
    assert rates.shape == (3, 4)
    for r in range(3):
        np.testing.assert_allclose(rates[r], dp.rates(stacked[r], cells))
    histograms = np.stack([_exact_histogram(dp, stacked[r], cells) for r in range(3)])
    np.testing.assert_allclose(dp.histogram_rates(histograms), rates)
    lam = np.random.default_rng(6).uniform(size=(3, 4))
    weights = dp.cell_weights(lam, histograms)
    assert weights.shape == (3, 2, 2)
    np.testing.assert_allclose(weights[1], dp.cell_weights(lam[1], histograms[1]))


def test_reused_constraint_tensors_follow_each_call_dtype():
    """The membership and coefficient tensors are made once per dtype and reused: float32 and
    float64 calls on one constraint set, in either order, give what a fresh set gives."""
    rng = np.random.default_rng(1)
    histogram = torch.as_tensor(rng.uniform(1.0, 5.0, (2, 3, 2)))
    lam = torch.as_tensor(rng.uniform(0.0, 1.0, (2, 6)))
    shared = demographic_parity(3, gamma=0.1)
    for dtype in (torch.float64, torch.float32, torch.float64):
        fresh = demographic_parity(3, gamma=0.1)
        h, multipliers = histogram.to(dtype), lam.to(dtype)
        weights = shared.cell_weights(multipliers, h)
        rates = shared.histogram_rates(h)
        assert weights.dtype == rates.dtype == dtype
        assert torch.equal(weights, fresh.cell_weights(multipliers, h))
        assert torch.equal(rates, fresh.histogram_rates(h))
