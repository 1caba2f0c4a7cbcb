"""ERMI (DP-FERMI Def. 3.1, App. B eq. 5) and its min-max form (Thm. 3.2, Lemma D.1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dpminimax.algorithms.fair.ermi import (
    conditional_ermi,
    ermi,
    optimal_w,
    psi,
    psi_grad_f,
    psi_grad_f_parts,
    psi_grad_w,
    psi_grad_w_norms,
)


@pytest.fixture(autouse=True)
def _double_precision():
    """Identities checked to 1e-12: float64 in this module only."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _direct_ermi(pred: np.ndarray, s: np.ndarray, classes: int, groups: int) -> float:
    """sum_{j,r} p(j,r)^2 / (p(j) p(r)) - 1 from a contingency table (Def. 3.1)."""
    joint = np.zeros((classes, groups))
    np.add.at(joint, (pred, s), 1.0)
    joint /= len(pred)
    outer = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
    return float(np.sum(np.divide(joint**2, outer, out=np.zeros_like(joint), where=outer > 0))
                 - 1.0)


def _soft_problem(runs=3, batch=60, classes=3, groups=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(runs, batch, classes, generator=generator)
    s = torch.arange(batch) % groups                       # every group present
    s = s[torch.randperm(batch, generator=generator)]
    return logits, F.one_hot(s, groups).double(), s


def test_ermi_equals_the_direct_computation_from_frequencies():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 3, 500)
    preds = np.stack([rng.integers(0, 3, 500), (s + rng.integers(0, 2, 500)) % 3])
    values = ermi(F.one_hot(torch.as_tensor(preds), 3).double(),
                  F.one_hot(torch.as_tensor(s), 3).double())
    for r in range(2):
        assert values[r].item() == pytest.approx(_direct_ermi(preds[r], s, 3, 3), rel=1e-12)
    assert values[1] > 10 * values[0] > 0                  # predictions that follow s


def test_ermi_is_zero_iff_predictions_are_independent_of_s():
    s = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    independent = torch.tensor([1, 1, 0, 0] * 3)           # P(yhat = 1 | s) = 1/2 for every s
    dependent = torch.tensor([1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0])
    never_positive = torch.zeros(12, dtype=torch.long)     # an empty class, still independent
    preds = F.one_hot(torch.stack([independent, dependent, never_positive]), 2).double()
    values = ermi(preds, F.one_hot(s, 3).double())
    assert values[0].item() == pytest.approx(0.0, abs=1e-12)
    assert values[2].item() == pytest.approx(0.0, abs=1e-12)
    # P(yhat = 1 | s) = (3/4, 1/2, 1/2), P(yhat = 1) = 7/12, p(s) = 1/3:
    # sum_r p(r) sum_j p(j|r)^2 / p(j) - 1 = (1.1142857 + 2 * 1.0285714) / 3 - 1 = 2/35
    assert values[1].item() == pytest.approx(2 / 35, rel=1e-12)


def test_max_over_w_of_mean_psi_is_soft_ermi_at_the_closed_form_maximiser():
    """Thm. 3.2: W*_rj = pbar(j, r)/(sqrt(p(r)) pbar(j)) maximises mean_i psi_i; its value is
    the soft ERMI; mean psi is quadratic in W with curvature -pbar(j), so for any D:
    mean psi(W* + D) = mean psi(W*) - sum_rj D_rj^2 pbar(j)."""
    logits, s, _ = _soft_problem()
    f = torch.softmax(logits, dim=-1)
    p_s = s.mean(dim=0)
    w_star = optimal_w(f, s, p_s)
    best = psi(f, s, w_star, p_s).mean(dim=1)
    torch.testing.assert_close(best, ermi(f, s), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(psi_grad_w(f, s, w_star, p_s), torch.zeros_like(w_star),
                               rtol=0, atol=1e-12)     # first-order condition
    direction = torch.randn(w_star.shape, generator=torch.Generator().manual_seed(1))
    moved = psi(f, s, w_star + direction, p_s).mean(dim=1)
    drop = (direction**2 * f.mean(dim=1).unsqueeze(1)).sum(dim=(1, 2))
    torch.testing.assert_close(moved, best - drop, rtol=1e-12, atol=1e-12)
    assert bool((ermi(f, s) >= 0).all())


def test_gradients_equal_autograd():
    """dpsi/dF (chain rule through the model), the weighted W-gradient sum and the per-example
    W-gradient norms of Lemma D.1 against torch autograd."""
    logits, s, labels = _soft_problem(runs=2, batch=20)
    logits.requires_grad_(True)
    w = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(2), requires_grad=True)
    p_s = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.3, 0.2]])
    f = torch.softmax(logits, dim=-1)
    weights = torch.rand(2, 20, generator=torch.Generator().manual_seed(3))
    (weights * psi(f, s, w, p_s)).sum().backward()
    # logits: sum_j c_ij dF_ij/dz_ik, with dF/dz the softmax Jacobian
    c = psi_grad_f(s, w.detach(), p_s)
    fd = f.detach()
    chain = fd * (c - (c * fd).sum(dim=-1, keepdim=True))
    torch.testing.assert_close(logits.grad, weights.unsqueeze(-1) * chain)
    torch.testing.assert_close(w.grad, psi_grad_w(fd, s, w.detach(), p_s, weights))
    # per-example norms: gradient of one psi_i at a time
    for i in (0, 7, 19):
        grad, = torch.autograd.grad(psi(fd, s, w, p_s)[:, i].sum(), w)
        torch.testing.assert_close(psi_grad_w_norms(fd, s, w.detach(), p_s)[:, i],
                                   torch.linalg.vector_norm(grad, dim=(1, 2)))
    # only the second part of dpsi/dF depends on s_i (the privacy proof's split)
    other = F.one_hot((labels + 1) % 4, 4).double()
    independent, sensitive = psi_grad_f_parts(s, w.detach(), p_s)
    independent_other, sensitive_other = psi_grad_f_parts(other, w.detach(), p_s)
    torch.testing.assert_close(independent, independent_other)
    assert not torch.allclose(sensitive, sensitive_other)


def _direct_conditional_ermi(pred, s, y, classes, groups):
    """eq. 5: sum_y p_Y(y) [ERMI of the examples with label y] (= the form with the -1 outside)."""
    return sum((y == label).mean() * _direct_ermi(pred[y == label], s[y == label], classes,
                                                  groups) for label in np.unique(y))


def test_conditional_ermi_equals_eq_5_and_vanishes_under_conditional_independence():
    rng = np.random.default_rng(4)
    s = rng.integers(0, 2, 400)
    y = (rng.random(400) < np.where(s == 0, 0.75, 0.25)).astype(int)  # base rates differ
    noisy = np.where(rng.random(400) < 0.2, 1 - y, y)
    perfect = y.copy()                   # yhat = y: independent of s given y, not marginally
    preds = F.one_hot(torch.as_tensor(np.stack([noisy, perfect])), 2).double()
    s_hot, y_hot = (F.one_hot(torch.as_tensor(v), 2).double() for v in (s, y))
    values = conditional_ermi(preds, s_hot, y_hot)
    assert values[0].item() == pytest.approx(_direct_conditional_ermi(noisy, s, y, 2, 2),
                                             rel=1e-10)
    assert values[1].item() == pytest.approx(0.0, abs=1e-12)
    assert ermi(preds, s_hot)[1].item() > 0.1


def test_weighted_equalized_odds_minmax_value_is_the_soft_conditional_ermi():
    """App. B eq. 5 (weighted): the whole-batch mean of psi_i with the W and P_{S|Y} of
    each example's label, maximised over (W_0, W_1), equals the soft conditional ERMI."""
    logits, s, _ = _soft_problem(runs=2, batch=80, classes=2, groups=3, seed=5)
    f = torch.softmax(logits, dim=-1)
    y = (torch.arange(80) % 5 < 2).long()                  # p_Y = (3/5, 2/5)
    value = torch.zeros(2, 80)
    for label in (0, 1):
        member = y == label
        p_s = s[member].mean(dim=0)
        w_star = optimal_w(f[:, member], s[member], p_s)
        value = torch.where(member, psi(f, s, w_star, p_s), value)
    torch.testing.assert_close(value.mean(dim=1), conditional_ermi(f, s, F.one_hot(y, 2).double()),
                               rtol=1e-12, atol=1e-12)
