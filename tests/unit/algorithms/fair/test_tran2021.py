"""Tran et al. 2021a (DP-SGD + demographic-parity penalty) and 2021b (PF-LD), re-implemented:
group-gap algebra, per-example gradients against autograd, the accounted events, the fairness
effect, batched == alone and parameter errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from toydata import toy_dataset

from dpminimax.algorithms.base import RunSpec, UnknownParameterError, expand_runs
from dpminimax.algorithms.fair import tran2021a, tran2021b
from dpminimax.algorithms.fair.group_stats import GroupCells, gap_weights, rate_gaps
from dpminimax.algorithms.fair.tran2021a import (
    Tran2021a,
    Tran2021aNonPrivate,
    Tran2021aProgram,
    penalty_logit_grad,
)
from dpminimax.algorithms.fair.tran2021b import (
    PfldProgram,
    Tran2021b,
    Tran2021bNonPrivate,
    constraint_logit_jacobian,
    pfld_releases,
    violation_bound,
    violation_contributions,
)
from dpminimax.algorithms.fair.tran2021b_compiled import pfld_sums
from dpminimax.data import PreparedDataset
from dpminimax.kernels.grouped import grouped_sums
from dpminimax.kernels.linear import linear_logits, noisy_linear_descent
from dpminimax.kernels.sampling import poisson_batches
from dpminimax.kernels.sparse_rows import sparse_rows_supported
from dpminimax.metrics import demographic_parity_violation
from dpminimax.privacy import epsilon
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.events import event_from_dict
from dpminimax.privacy.release import BatchedRelease
from dpminimax.seeding import make_generator

DEVICE = torch.device("cpu")
INF = math.inf


def _biased(n=4000, seed=0) -> PreparedDataset:
    """Group 1 (40%) has more positives (the label's logit is 2u + s) and feature 0 is u shifted
    by the group: unconstrained logistic regression has a demographic-parity violation ~0.39."""
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.4).astype(np.int64)
    u = rng.normal(0.0, 1.0, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * (u + s)))).astype(np.int64)
    x = np.stack([u + 1.5 * s + rng.normal(0, 0.5, n), u + rng.normal(0, 1.0, n)], 1)
    half = n // 2
    return toy_dataset(x[:half], y[:half], s[:half], x_test=x[half:].astype(np.float32),
                    y_test=y[half:], s_test=s[half:])


@pytest.fixture
def cached_calibration(monkeypatch):
    """Calibration is a deterministic function of the event family and the target: reuse it
    across the fits of one test (speed only; the events are still recorded and checked)."""
    cache = {}

    def cached(make_tree, eps, delta, accountant="rdp", **kwargs):
        key = (repr(make_tree(1.0)), repr(make_tree(2.0)), eps, delta, accountant)
        if key not in cache:
            cache[key] = calibrate_release_parameter(make_tree, eps, delta, accountant,
                                                     **kwargs)
        return cache[key]

    for module in (tran2021a, tran2021b):
        monkeypatch.setattr(module, "calibrate_release_parameter", cached)


def _sigmoid_pair(logits):
    return torch.softmax(torch.cat([torch.zeros_like(logits), logits], -1), -1)[..., 1:]


def _dp_violation(fit, data) -> np.ndarray:
    """Test-set demographic-parity violation (DP-FERMI eq. 10) of every run."""
    predicted = fit.model.predict(fit.state, torch.as_tensor(data.x_test)).numpy()
    return np.array([demographic_parity_violation(p, data.s_test) for p in predicted])


# --- group gaps (group_stats) ----------------------------------------------------------------

def test_gap_weights_and_rate_gaps_by_hand():
    """Demographic parity, counts [2, 3, 5] (N = 10): w_ic = 1[c_i = c]/N_c - 1/10. Equalized
    odds, cells (y, a) = [(0,0), (0,1), (1,0), (1,1)] with counts [1, 3, 2, 2]: parents' sizes
    4, 4, 4, 4 and an example of cell (1, 0) has w = [0, 0, 1/2 - 1/4, -1/4]."""
    dp = GroupCells("demographic_parity", 3)
    w = gap_weights(torch.tensor([[0, 2]]), torch.tensor([[2.0, 3.0, 5.0]]), dp.parents())
    torch.testing.assert_close(w, torch.tensor([[[0.4, -0.1, -0.1], [-0.1, -0.1, 0.1]]]))
    eo = GroupCells("equalized_odds", 2)
    assert eo.num_cells == 4 and eo.parents().tolist() == [0, 0, 1, 1]
    assert eo.cell_of(torch.tensor([1, 0]), torch.tensor([0, 1])).tolist() == [2, 1]
    counts = torch.tensor([[1.0, 3.0, 2.0, 2.0]])
    w = gap_weights(torch.tensor([[2]]), counts, eo.parents())
    torch.testing.assert_close(w, torch.tensor([[[0.0, 0.0, 0.25, -0.25]]]))
    # sums [1, 0, 2, 0]: rates [1, 0, 1, 0], parents' rates [1/4, 2/4]
    gaps = rate_gaps(torch.tensor([[1.0, 0.0, 2.0, 0.0]]), counts, eo.parents())
    torch.testing.assert_close(gaps, torch.tensor([[0.75, -0.25, 0.5, -0.5]]))
    # noisy sizes below 1 are floored at 1 (post-processing)
    floored = rate_gaps(torch.tensor([[0.5, 1.0]]), torch.tensor([[-3.0, 1.0]]),
                        GroupCells("demographic_parity", 2).parents())
    torch.testing.assert_close(floored, torch.tensor([[0.5 - 0.75, 1.0 - 0.75]]))


def test_gap_is_the_linear_form_of_the_weights_and_cell_sums_respect_the_mask():
    gen = torch.Generator().manual_seed(3)
    eo = GroupCells("equalized_odds", 3)
    cells = torch.randint(0, 6, (2, 40), generator=gen)
    probs = torch.rand(2, 40, 1, generator=gen)
    mask = torch.ones(2, 40, dtype=torch.bool)
    mask[1, 30:] = False
    sums = grouped_sums(probs, cells, mask, 6, counts=True)
    for r in range(2):
        for c in range(6):
            members = (cells[r] == c) & mask[r]
            assert float(sums[r, c, 0]) == float(members.sum())
            torch.testing.assert_close(sums[r, c, 1], probs[r, members, 0].sum())
    gaps = rate_gaps(sums[..., 1], sums[..., 0], eo.parents())
    weights = gap_weights(cells, sums[..., 0], eo.parents()) * mask.unsqueeze(-1)
    torch.testing.assert_close((weights * probs).sum(1), gaps)


def test_group_cells_reject_bad_fairness_and_single_group():
    with pytest.raises(ValueError, match="fairness must be one of"):
        GroupCells("equal_opportunity", 2)
    with pytest.raises(ValueError, match="at least 2 sensitive groups"):
        GroupCells("demographic_parity", 1)


# --- Tran et al. 2021a ----------------------------------------------------------------------

def _toy_linear(runs=2, batch=9, features=3, groups=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(runs, batch, features, generator=gen)
    y = torch.randint(0, 2, (runs, batch), generator=gen)
    s = torch.arange(batch).remainder(groups).expand(runs, -1).contiguous()
    weight = 0.5 * torch.randn(runs, 1, features, generator=gen)
    bias = 0.5 * torch.randn(runs, 1, generator=gen)
    return x, y, s, weight, bias, gen


def test_tran2021a_per_example_gradient_matches_autograd_with_a_released_histogram():
    """r_i ⊗ [x_i, 1] equals autograd of m * (l_i / m + gamma sum_a s_a (1[a_i = a]/N_a - 1/N)
    p_i) per example, with N_a, N and the signs computed by hand from a fixed noisy histogram
    (one count below 1, so the floor is exercised)."""
    x, y, s, weight, bias, gen = _toy_linear()
    histogram = torch.stack([torch.tensor([[3.2, 1.9], [0.4, 0.7], [2.6, 0.3]]),
                             torch.tensor([[2.9, 0.2], [3.5, 2.6], [3.1, 1.0]])])
    gamma, m = torch.tensor([0.7, 2.0]), 6.0
    probs = _sigmoid_pair(linear_logits(weight, bias, x))
    penalty = penalty_logit_grad(probs, s, histogram, GroupCells("demographic_parity", 3)
                                 .parents())
    residual = probs - y.unsqueeze(-1) + m * gamma.view(-1, 1, 1) * penalty
    ours = torch.cat([residual * x, residual], dim=-1)                        # (R, B, d + 1)
    for r in range(2):
        sizes = torch.clamp(histogram[r, :, 0], min=1.0)
        total = sizes.sum()
        signs = torch.sign(histogram[r, :, 1] / sizes - histogram[r, :, 1].sum() / total)
        for i in range(x.shape[1]):
            theta = torch.cat([weight[r, 0], bias[r]]).clone().requires_grad_(True)
            z = x[r, i] @ theta[:-1] + theta[-1]
            a = int(s[r, i])
            objective = (F.binary_cross_entropy_with_logits(z, y[r, i].float())
                         + m * gamma[r] * (signs[a] / sizes[a] - signs.sum() / total)
                         * torch.sigmoid(z))
            (grad,) = torch.autograd.grad(objective, theta)
            torch.testing.assert_close(ours[r, i], grad, rtol=1e-5, atol=1e-6)


def test_tran2021a_objective_with_exact_histogram_is_the_penalty():
    """With the exact batch histogram, (1/m) sum_i r_i ⊗ [x_i, 1] is the gradient (autograd) of
    mean-over-m of the losses + gamma sum_a |pbar_a - pbar| on the batch."""
    x, y, s, weight, bias, _ = _toy_linear(runs=1, batch=12)
    gamma, m = 1.3, 10.0
    theta = torch.cat([weight[0, 0], bias[0]]).clone().requires_grad_(True)
    z = x[0] @ theta[:-1] + theta[-1]
    p = torch.sigmoid(z)
    means = torch.stack([p[s[0] == a].mean() for a in range(3)])
    objective = (F.binary_cross_entropy_with_logits(z, y[0].float(), reduction="sum") / m
                 + gamma * (means - p.mean()).abs().sum())
    (expected,) = torch.autograd.grad(objective, theta)
    probs = _sigmoid_pair(linear_logits(weight, bias, x))
    exact = grouped_sums(torch.cat([torch.ones_like(probs), probs], -1), s,
                         torch.ones_like(s, dtype=torch.bool), 3)
    residual = probs - y.unsqueeze(-1) + m * gamma * penalty_logit_grad(
        probs, s, exact, torch.zeros(3, dtype=torch.long))
    ours = torch.cat([(residual * x).sum(1)[0], residual.sum(1)[0]]) / m
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-6)


def test_tran2021a_program_step_is_the_penalised_gradient_step():
    """Non-private program: one step moves theta by -lr * (autograd of the batch objective) on
    the batch its "poisson" stream draws."""
    data = _biased(n=400)
    method, grid = Tran2021aNonPrivate(), {"lr": 0.8, "gamma": 1.5, "batch_size": 50}
    plan = method.plan(RunSpec(4, INF, 1e-5, grid), 200)
    assert plan.values["sampling_rate"] == 0.25
    program = Tran2021aProgram(data, [4], [{**method.resolve(grid), **plan.values}],
                               [plan.releases], device=DEVICE)
    start = torch.tensor([0.4, -0.3, 0.1])
    program.state["weight"] = start[:2].view(1, 1, 2).clone()
    program.state["bias"] = start[2:].view(1, 1).clone()
    index, mask = poisson_batches(200, 0.25, [make_generator(4, "poisson")])
    rows = index[0][mask[0]]
    program.step()
    theta = start.clone().requires_grad_(True)
    xb, yb, sb = (torch.as_tensor(a)[rows] for a in (data.x_train, data.y_train, data.s_train))
    z = xb @ theta[:2] + theta[2]
    p = torch.sigmoid(z)
    means = torch.stack([p[sb == a].mean() for a in range(2)])
    objective = (F.binary_cross_entropy_with_logits(z, yb.float(), reduction="sum") / 50.0
                 + 1.5 * (means - p.mean()).abs().sum())
    (grad,) = torch.autograd.grad(objective, theta)
    moved = torch.cat([program.state["weight"][0, 0], program.state["bias"][0]])
    torch.testing.assert_close(moved, start - 0.8 * grad, rtol=1e-5, atol=1e-6)


def test_tran2021a_accounting_contains_every_release():
    """Event = SelfComposed(PoissonSampled(q, Composed([G(sigma), G(rho sigma)])), T), its
    epsilon is the recorded one and within the target; the program's noise stds are the
    multipliers times the sensitivities (C for the gradient, sqrt(2) for the histogram); gamma
    = 0 releases no histogram (plain DP-SGD)."""
    data = _biased(n=800)
    runs = expand_runs([0], 2.0, 1e-5, {"gamma": [0.0, 1.0], "batch_size": 100, "epochs": 2,
                                        "clip": 0.5, "histogram_noise_ratio": 2.0})
    fit = Tran2021a().fit(data, runs, DEVICE)
    q, steps = 100 / 400, math.ceil(2 / (100 / 400))
    for record, params in zip(fit.accounting, fit.resolved_params, strict=True):
        assert record["epsilon"] <= 2.0 + 1e-9
        assert record["epsilon"] > 1.9                     # calibrated, not wasteful
        event = event_from_dict(record["event"])
        assert epsilon(event, 1e-5, "rdp") == pytest.approx(record["epsilon"], rel=1e-12)
        assert record["event"]["type"] == "SelfComposedDpEvent"
        assert record["event"]["count"] == steps == params["steps"]
        sampled = record["event"]["event"]
        assert sampled["type"] == "PoissonSampledDpEvent"
        assert sampled["sampling_probability"] == pytest.approx(q)
        sigma = params["noise_multiplier"]
        if params["gamma"] == 0:
            assert sampled["event"] == {"type": "GaussianDpEvent", "noise_multiplier": sigma}
            assert params["histogram_noise_multiplier"] == 0.0
        else:
            assert sampled["event"]["type"] == "ComposedDpEvent"
            assert [e["noise_multiplier"] for e in sampled["event"]["events"]] == pytest.approx(
                [sigma, 2.0 * sigma])
    # the histogram costs privacy: the gamma > 0 run needs more gradient noise
    assert fit.resolved_params[1]["noise_multiplier"] > fit.resolved_params[0]["noise_multiplier"]
    plans = [Tran2021a().plan(run, 400) for run in runs]
    assert [plan.record for plan in plans] == fit.accounting
    program = Tran2021aProgram(data, [0, 0], fit.resolved_params,
                               [plan.releases for plan in plans], device=DEVICE)
    sigmas = [p["noise_multiplier"] for p in fit.resolved_params]
    torch.testing.assert_close(program.gradient.clip, torch.tensor([0.5, 0.5]))
    torch.testing.assert_close(program.gradient.noise_std, 0.5 * torch.tensor(sigmas))
    torch.testing.assert_close(program.histogram.noise_std,
                               torch.tensor([0.0, 2.0 * sigmas[1] * math.sqrt(2.0)]))


def test_tran2021a_penalty_reduces_demographic_parity_violation():
    """Known direction on the biased problem (two seeds each): gamma = 1 cuts the DP violation of
    gamma = 0 (~0.38) by more than 0.15 (to ~0.1), non-private and at a high epsilon."""
    data = _biased()
    grid = {"gamma": [0.0, 1.0], "batch_size": 200, "epochs": 10, "lr": 0.4}
    for method, eps in ((Tran2021aNonPrivate(), INF), (Tran2021a(), 20.0)):
        fit = method.fit(data, expand_runs([0, 1], eps, 1e-5, grid), DEVICE)
        violation = _dp_violation(fit, data)
        assert violation[:2].mean() > 0.35
        assert violation[2:].mean() < violation[:2].mean() - 0.15, (method.name, violation)


def test_tran2021a_batched_runs_equal_runs_alone(cached_calibration):
    """Four runs (2 seeds x gamma in {0, 3}, so two noise plans) trained together end bit for
    bit where each ends trained alone, with the same accounting record."""
    data = _biased(n=600)
    runs = expand_runs([0, 1], 1.5, 1e-5, {"gamma": [0.0, 3.0], "batch_size": 60, "epochs": 2})
    together = Tran2021a().fit(data, runs, DEVICE)
    for r, run in enumerate(runs):
        alone = Tran2021a().fit(data, [run], DEVICE)
        for key in ("weight", "bias"):
            assert torch.equal(together.state[key][r], alone.state[key][0]), (r, key)
        assert together.accounting[r] == alone.accounting[0]
    assert not torch.equal(together.state["weight"][0], together.state["weight"][1])


# --- Tran et al. 2021b (PF-LD) ---------------------------------------------------------------

def test_pfld_constraint_jacobian_matches_autograd_per_example():
    """Equalized odds, 2 groups: u_ic ⊗ [x_i, 1] equals autograd of the per-example term of
    m gap_c^B = n w_ic p_i, with w_ic written out by hand from the released counts."""
    x, y, s, weight, bias, _ = _toy_linear(runs=1, batch=8, groups=2)
    eo = GroupCells("equalized_odds", 2)
    cells = eo.cell_of(y, s)
    counts = torch.tensor([[40.0, 25.0, 20.0, 15.0]])
    n = 100
    probs = _sigmoid_pair(linear_logits(weight, bias, x))
    u = constraint_logit_jacobian(probs, cells, counts, eo.parents(), n)
    label_sizes = [65.0, 35.0]
    for i in range(8):
        c_i, label = int(cells[0, i]), int(y[0, i])
        for c in range(4):
            w = float(c == c_i) / counts[0, c] - float(c // 2 == label) / label_sizes[c // 2]
            theta = torch.cat([weight[0, 0], bias[0]]).clone().requires_grad_(True)
            term = n * w * torch.sigmoid(x[0, i] @ theta[:-1] + theta[-1])
            (grad,) = torch.autograd.grad(term, theta)
            ours = u[0, i, c] * torch.cat([x[0, i], torch.ones(1)])
            torch.testing.assert_close(ours, grad, rtol=1e-5, atol=1e-6)


def test_pfld_violation_contributions_average_to_the_gap():
    """Exact counts: mean_i v_ic = E[p | cell] - E[p | parent] computed directly."""
    data = _biased(n=400)
    eo = GroupCells("equalized_odds", 2)
    y, s = torch.as_tensor(data.y_train), torch.as_tensor(data.s_train)
    cells = eo.cell_of(y, s).unsqueeze(0)
    counts = torch.bincount(cells[0], minlength=4).float().unsqueeze(0)
    probs = torch.rand(1, 200, 1, generator=torch.Generator().manual_seed(1))
    v = violation_contributions(probs, cells, counts, eo.parents(), 200)
    p = probs[0, :, 0]
    direct = [float(p[cells[0] == c].mean() - p[y == c // 2].mean()) for c in range(4)]
    torch.testing.assert_close(v.mean(1)[0], torch.tensor(direct))


def _pfld_program(data, seed, method, **overrides) -> PfldProgram:
    """The program of one run with sigma = 0 (no noise, but a private method's clips)."""
    params = method.resolve(overrides)
    n = len(data.y_train)
    q, epochs = params["batch_size"] / n, params["epochs"]
    dual_clip = float(n) if params["clip_dual"] == "bound" else float(params["clip_dual"])
    per_epoch = math.ceil(1 / q)
    releases = pfld_releases(q, epochs * per_epoch, epochs - 1, 0.0, (1.0, 1.0),
                             (float(params["clip_primal"]), dual_clip))
    planned = {"sampling_rate": q, "steps": epochs * per_epoch, "steps_per_epoch": per_epoch}
    return PfldProgram(data, [seed], [{**params, **planned}], [releases], device=DEVICE)


def test_pfld_primal_step_is_the_lagrangian_gradient_step():
    """Non-private: with multipliers lam+-, one primal step moves theta by -lr * autograd of
    (1/m) sum_{i in B} l_i + sum_c (lam+_c - lam-_c) sum_{i in B} (n/m) w_ic p_i."""
    data = _biased(n=400)
    program = _pfld_program(data, 2, Tran2021bNonPrivate(), lr=0.6, batch_size=50,
                            fairness="equalized_odds")
    assert program.q == 0.25
    program.multipliers = torch.tensor([[0.5, 1.5, 0.0, 2.0, 0.0, 0.7, 0.0, 0.4]])
    mu = [0.5, 0.8, 0.0, 1.6]
    start = torch.tensor([0.2, -0.4, 0.3])
    program.state["weight"] = start[:2].view(1, 1, 2).clone()
    program.state["bias"] = start[2:].view(1, 1).clone()
    index, mask = poisson_batches(200, 0.25, [make_generator(2, "poisson")])
    rows = index[0][mask[0]]
    program.primal_step()
    y, s = torch.as_tensor(data.y_train), torch.as_tensor(data.s_train)
    cells = 2 * y + s
    counts = torch.bincount(cells, minlength=4).float()
    theta = start.clone().requires_grad_(True)
    xb = torch.as_tensor(data.x_train)[rows]
    z = xb @ theta[:2] + theta[2]
    p = torch.sigmoid(z)
    lagrangian = F.binary_cross_entropy_with_logits(z, y[rows].float(), reduction="sum") / 50.0
    for c in range(4):
        label_size = counts[2 * (c // 2):2 * (c // 2) + 2].sum()
        w = (cells[rows] == c).float() / counts[c] - (y[rows] == c // 2).float() / label_size
        lagrangian = lagrangian + mu[c] * (200 / 50.0) * (w * p).sum()
    (grad,) = torch.autograd.grad(lagrangian, theta)
    moved = torch.cat([program.state["weight"][0, 0], program.state["bias"][0]])
    torch.testing.assert_close(moved, start - 0.6 * grad, rtol=1e-5, atol=1e-6)


def test_pfld_dual_step_by_hand():
    """Non-private: lam+- <- max(0, lam+- + s (+-gap - alpha)) with the exact full-data gaps.
    Demographic parity with theta = (1, 0, 0): p_i = sigmoid(x_i0), group 1 above the mean."""
    data = _biased(n=400)
    program = _pfld_program(data, 0, Tran2021bNonPrivate(), alpha=0.1, lr_dual=2.0)
    program.state["weight"][0, 0, 0] = 1.0
    start = torch.tensor([0.05, 0.3, 0.6, 0.0])
    program.multipliers = start[None].clone()
    program.dual_step()
    p = torch.sigmoid(torch.as_tensor(data.x_train)[:, 0])
    s = torch.as_tensor(data.s_train)
    gap = torch.stack([p[s == a].mean() - p.mean() for a in range(2)])
    assert float(gap[0]) < -0.1 < 0.1 < float(gap[1])
    expected = torch.clamp(start + 2.0 * (torch.cat([gap, -gap]) - 0.1), min=0.0)
    assert expected[0] == 0 and expected[3] == 0 and expected[1] > 0.3 and expected[2] > 0.6
    torch.testing.assert_close(program.multipliers[0], expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(program.combined_multipliers()[0],
                               expected[:2] - expected[2:])
    program.state["weight"].zero_()                   # p = 1/2 everywhere: gaps 0, slack -alpha
    program.dual_step()
    torch.testing.assert_close(program.multipliers[0],
                               torch.clamp(expected - 2.0 * 0.1, min=0.0), rtol=1e-5, atol=1e-6)


def test_pfld_accounting_contains_every_release(monkeypatch):
    """One event: counts, T = E ceil(1/q) same-batch (loss, Jacobian) steps, E - 1 dual
    releases; its epsilon is the recorded one, within the target; the program performs exactly
    those releases with stds = multiplier x sensitivity."""
    data = _biased(n=800)
    dual_calls = []
    original = PfldProgram.dual_step
    monkeypatch.setattr(PfldProgram, "dual_step",
                        lambda self: (dual_calls.append(1), original(self))[1])
    primal_calls = []
    original_primal = PfldProgram.primal_step
    monkeypatch.setattr(PfldProgram, "primal_step",
                        lambda self: (primal_calls.append(1), original_primal(self))[1])
    runs = [RunSpec(0, 3.0, 1e-5, {"batch_size": 120, "epochs": 3, "dual_noise_ratio": 4.0,
                                   "count_noise_ratio": 6.0, "fairness": "equalized_odds"})]
    fit = Tran2021b().fit(data, runs, DEVICE)
    record, params = fit.accounting[0], fit.resolved_params[0]
    q = 120 / 400
    per_epoch = math.ceil(1 / q)
    assert params["steps"] == 3 * per_epoch == len(primal_calls) == 12
    assert len(dual_calls) == 2
    assert record["epsilon"] <= 3.0 + 1e-9 and record["epsilon"] > 2.9
    assert epsilon(event_from_dict(record["event"]), 1e-5, "rdp") == pytest.approx(
        record["epsilon"], rel=1e-12)
    sigma = params["noise_multiplier"]
    counts, primal, dual = record["event"]["events"]
    assert counts == {"type": "GaussianDpEvent", "noise_multiplier": pytest.approx(6.0 * sigma)}
    assert primal["count"] == 12
    assert primal["event"]["sampling_probability"] == pytest.approx(q)
    assert [e["noise_multiplier"] for e in primal["event"]["event"]["events"]] == pytest.approx(
        [sigma, sigma])
    assert dual["count"] == 2
    assert dual["event"]["noise_multiplier"] == pytest.approx(4.0 * sigma)
    plan = Tran2021b().plan(runs[0], 400)
    assert plan.record == record and plan.values["noise_multiplier"] == sigma
    assert plan.release("violations").sensitivity == 400.0    # the bound for any counts
    program = PfldProgram(data, [0], [params], [plan.releases], device=DEVICE)
    for release in (program.gradient, program.jacobian):
        torch.testing.assert_close(release.clip, torch.tensor([10.0]))
        torch.testing.assert_close(release.noise_std, torch.tensor([10.0 * sigma]))
    assert params["clip_dual"] == "bound"
    torch.testing.assert_close(program.dual.clip,
                               violation_bound(program.counts, program.parents, 400))
    assert float(program.dual.clip) < 400.0
    torch.testing.assert_close(program.dual.noise_std, program.dual.clip * 4.0 * sigma)


def _small_cell(n=2000, seed=0) -> PreparedDataset:
    """Group 1 is 6% of the data and mostly positive: the equalized-odds cell (y = 0, s = 1)
    holds about 1% of the examples, so its ||v_i|| is about 100 times the largest cell's."""
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.06).astype(np.int64)
    u = rng.normal(0.0, 1.0, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * (u + s)))).astype(np.int64)
    x = np.stack([u + s, rng.normal(0.0, 1.0, n)], 1).astype(np.float32)
    return toy_dataset(x, y, s)


def test_pfld_violation_bound_is_the_largest_contribution_norm():
    """For any p in [0, 1] no example's ||v_i|| exceeds violation_bound (the dual release's
    sensitivity without clipping); p = 1 reaches it (every cell is occupied)."""
    data = _small_cell()
    for fairness in ("demographic_parity", "equalized_odds"):
        groups = GroupCells(fairness, 2)
        cells = groups.cell_of(torch.as_tensor(data.y_train), torch.as_tensor(data.s_train))
        counts = torch.bincount(cells, minlength=groups.num_cells).float()[None]
        counts = counts + torch.tensor([[3.5, -2.0, 0.25, 7.0][:groups.num_cells]])  # noisy
        bound = violation_bound(counts, groups.parents(), len(cells))
        generator = torch.Generator().manual_seed(3)
        for probs in (torch.rand(1, len(cells), 1, generator=generator),
                      torch.ones(1, len(cells), 1)):
            v = violation_contributions(probs, cells[None], counts, groups.parents(), len(cells))
            largest = torch.linalg.vector_norm(v, dim=-1).max()
            assert float(largest) <= float(bound[0]) * (1 + 1e-6)
        torch.testing.assert_close(largest, bound[0])


def test_pfld_dual_release_at_the_bound_is_the_gap_and_a_small_clip_biases_it():
    """Noise-free releases (sigma = 0) at a theta with unequal rates: C_d = "bound" gives the
    exact full-data gaps; C_d = 5 (PF-LD's value) clips only the small cell's examples and
    shifts its released gap by more than 0.1 -- the bias that reversed the equalized-odds
    constraint on Adult."""
    data = _small_cell()
    y, s = torch.as_tensor(data.y_train), torch.as_tensor(data.s_train)
    p = torch.sigmoid(torch.as_tensor(data.x_train)[:, 0])
    exact = torch.stack([p[(y == c // 2) & (s == c % 2)].mean() - p[y == c // 2].mean()
                         for c in range(4)])
    released = {}
    for clip in ("bound", 5.0):
        program = _pfld_program(data, 0, Tran2021b(), fairness="equalized_odds",
                                clip_dual=clip)
        program.state["weight"][0, 0, 0] = 1.0
        released[clip] = program.violations()[0]
    torch.testing.assert_close(released["bound"], exact, rtol=1e-4, atol=1e-5)
    small = int(torch.bincount(2 * y + s, minlength=4).argmin())
    assert abs(float(released[5.0][small] - exact[small])) > 0.1


def test_pfld_constraint_reduces_demographic_parity_violation():
    """Known direction on the biased problem (two seeds each): alpha = 0.02 cuts the DP
    violation of an inactive constraint (alpha = 1, ~0.39) by more than 0.15, non-private and
    at a high epsilon."""
    data = _biased()
    grid = {"alpha": [1.0, 0.02], "batch_size": 200, "epochs": 20, "lr": 0.2}
    for method, eps in ((Tran2021bNonPrivate(), INF), (Tran2021b(), 50.0)):
        fit = method.fit(data, expand_runs([0, 1], eps, 1e-5, grid), DEVICE)
        violation = _dp_violation(fit, data)
        assert violation[:2].mean() > 0.35
        assert violation[2:].mean() < violation[:2].mean() - 0.15, (method.name, violation)


def test_pfld_batched_runs_equal_runs_alone(cached_calibration):
    """Four equalized-odds runs (2 seeds x alpha in {0.01, 0.2}) trained together end bit for
    bit where each ends trained alone."""
    data = _biased(n=1200)
    runs = expand_runs([0, 1], 2.0, 1e-5, {"alpha": [0.01, 0.2], "batch_size": 60, "epochs": 3,
                                           "fairness": "equalized_odds"})
    together = Tran2021b().fit(data, runs, DEVICE)
    for r, run in enumerate(runs):
        alone = Tran2021b().fit(data, [run], DEVICE)
        for key in ("weight", "bias"):
            assert torch.equal(together.state[key][r], alone.state[key][0]), (r, key)
    assert not torch.equal(together.state["weight"][0], together.state["weight"][1])


@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds"])
def test_pfld_compiled_primal_sums_give_the_torch_bits(fairness, cached_calibration,
                                                       monkeypatch):
    """The compiled primal sums (both releases, clipping binding, multipliers moving after the
    first epoch's dual step) are the torch form's bits at every step: every value handed to
    the noise (before it is added, where noise would hide the last bits) and the end states."""

    perturb = BatchedRelease.perturb

    def fit(compiled: bool):
        released, calls, descents = [], [], []

        def noised(release, values, generators):
            released.extend(v.clone() for v in (
                values.values() if isinstance(values, dict) else [values]))
            return perturb(release, values, generators)

        def descended(state, sums, **kwargs):
            descents.append(kwargs["release"].name)
            return noisy_linear_descent(state, sums, **kwargs)

        def counted(*args, **kwargs):
            calls.append(1)
            return pfld_sums(*args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(tran2021b, "pfld_sums", counted)
            patch.setattr(BatchedRelease, "perturb", noised)
            patch.setattr(tran2021b, "noisy_linear_descent", descended)
            if not compiled:   # the primal check (theta and the gap-weight table) only:
                # the per-epoch dual release keeps its own sparse logits in both fits
                patch.setattr(tran2021b, "sparse_rows_supported",
                              lambda rows, *tensors: len(tensors) != 3 and
                              sparse_rows_supported(rows, *tensors))
            runs = expand_runs([0, 1], 2.0, 1e-5, {
                "alpha": [0.0, 0.05], "batch_size": 60, "epochs": 3, "fairness": fairness,
                "clip_primal": 0.3, "lr": 0.5})
            fitted = Tran2021b().fit(_biased(n=1200), runs, DEVICE)
            assert descents == ["gradient"] * (3 * math.ceil(600 / 60))
            return fitted, released, len(calls)

    compiled, compiled_sums, steps = fit(True)
    reference, reference_sums, none = fit(False)
    assert steps == 3 * math.ceil(600 / 60) and none == 0
    assert len(compiled_sums) == len(reference_sums) > 4 * steps
    for ours, theirs in zip(compiled_sums, reference_sums, strict=True):
        assert torch.equal(ours, theirs)
    for key in ("weight", "bias"):
        assert torch.equal(compiled.state[key], reference.state[key]), key
    assert torch.linalg.vector_norm(compiled.state["weight"]) > 1e-2


# --- parameter errors -----------------------------------------------------------------------

@pytest.mark.parametrize(("method", "params", "eps", "message"), [
    (Tran2021a(), {"gamma": -1.0}, 1.0, "'gamma' must be a number >= 0"),
    (Tran2021a(), {"clip": 0.0}, 1.0, r"'clip' must be a finite number > 0"),
    (Tran2021a(), {"histogram_noise_ratio": -2.0}, 1.0,
     "'histogram_noise_ratio' must be a number > 0"),
    (Tran2021a(), {"epochs": 0}, 1.0, "'epochs' must be a number > 0"),
    (Tran2021a(), {}, INF, "for epsilon = inf use 'tran2021a_nonprivate'"),
    (Tran2021aNonPrivate(), {}, 1.0, "its epsilon must be 'inf'"),
    (Tran2021b(), {"alpha": -0.1}, 1.0, "'alpha' must be a number >= 0"),
    (Tran2021b(), {"fairness": "parity"}, 1.0, "'fairness' must be one of"),
    (Tran2021b(), {"clip_dual": 0.0}, 1.0, "'clip_dual' must be 'bound' or a finite number > 0"),
    (Tran2021b(), {"clip_dual": "auto"}, 1.0, "'clip_dual' must be 'bound' or a finite number > 0"),
    (Tran2021b(), {"lr_dual": math.nan}, 1.0, "'lr_dual' must be a number >= 0"),
    (Tran2021b(), {}, INF, "for epsilon = inf use 'tran2021b_nonprivate'"),
    (Tran2021bNonPrivate(), {}, 1.0, "its epsilon must be 'inf'"),
])
def test_bad_parameters_fail_clearly(method, params, eps, message):
    data = _biased(n=200)
    with pytest.raises(ValueError, match=message):
        method.fit(data, [RunSpec(0, eps, 1e-5, params)], DEVICE)


def test_bad_data_and_unknown_or_varying_parameters_fail_clearly():
    data = _biased(n=200)
    with pytest.raises(UnknownParameterError, match="no parameter"):
        Tran2021aNonPrivate().fit(data, [RunSpec(0, INF, 1e-5, {"clip": 1.0})], DEVICE)
    runs = [RunSpec(0, 1.0, 1e-5, {"epochs": 1}), RunSpec(0, 1.0, 1e-5, {"epochs": 2})]
    with pytest.raises(ValueError, match="'epochs' must have one value per job"):
        Tran2021b().fit(data, runs, DEVICE)
    three = toy_dataset(data.x_train, np.arange(len(data.y_train)) % 3, data.s_train)
    with pytest.raises(ValueError, match="binary classifier"):
        Tran2021a().fit(three, [RunSpec(0, 1.0, 1e-5)], DEVICE)
    one_group = toy_dataset(data.x_train, data.y_train, np.zeros_like(data.s_train), groups=1)
    with pytest.raises(ValueError, match="at least 2 sensitive groups"):
        Tran2021b().fit(one_group, [RunSpec(0, 1.0, 1e-5)], DEVICE)
