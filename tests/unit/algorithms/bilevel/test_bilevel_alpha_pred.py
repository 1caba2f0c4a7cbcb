"""A1-OP's a-priori alpha_pred (papers/bilevel/NOTES.md): Lemma 4.3's explicit constants
checked on P-A's closed forms, the four conditions at alpha_pred and failing just below it, the
noise read from the method's own plan, pinned values, monotonicity in n and epsilon, the
asymptotic exponents of each binding term, and the collapse figure / table against it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.bilevel.bilevel_alpha_pred import (
    RELATIVE_TOLERANCE,
    penalty_constants,
    predicted_alpha,
    prediction_at,
)
from dpminimax.algorithms.bilevel.dp_bilevel import DpBilevel, zcdp_budget
from dpminimax.problems.linear_response import LinearResponseBilevel
from dpminimax.report.bilevel.collapse import collapse_table, with_alpha_pred
from dpminimax.report.registry import FIGURES, TABLES, FigureRequest
from dpminimax.seeding import make_generator

DELTA, GAMMA = 1e-5, 0.05
PA = LinearResponseBilevel()
#: (params, n, epsilon): e3's P-A point (lambda at lambda_min, the bias binds), a large n
#: (lambda = 2 B / alpha above lambda_min) and a large d_x (the outer noise binds).
CONFIGS = [({}, 16384, 2.0), ({"d_x": 1, "d_y": 1}, 10 ** 12, 2.0),
           ({"d_x": 10 ** 4, "d_y": 1}, 10 ** 5, 2.0)]


def _constants():
    return penalty_constants(PA.constants, PA.x.radius)


def _points(count: int, seed: int) -> torch.Tensor:
    """``count`` points of X = B(0, 2) (uniform directions, radii up to 2)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(count, PA.x.dim, generator=generator, dtype=torch.float64)
    radii = 2.0 * torch.rand(count, 1, generator=generator, dtype=torch.float64)
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True) * radii


def _stats(count: int, n: int = 64):
    samples = [PA.sample(n, make_generator(seed, "data")) for seed in range(count)]
    return PA.statistics({k: torch.stack([s[k] for s in samples]) for k in samples[0]})


def test_penalty_constants_on_p_a_are_pinned():
    """s = sqrt(1 + kappa_g^2) = 1.9021, B = s L0f L1f (L2g = 0, mu_g = 1), L_lambda =
    L1f (sqrt(1 + (1 + 2 kappa_g)^2) + 2 kappa_g s), L0f^2 / 2, Delta_F <= s L0f D_x."""
    c = _constants()
    assert c.gap == pytest.approx(21.519952382846636, rel=1e-12)
    assert c.smoothness == pytest.approx(21.0157377466323, rel=1e-12)
    assert c.value_gap == pytest.approx(16.0, rel=1e-12)
    assert c.initial_gap == pytest.approx(21.519952382846636, rel=1e-12)


@pytest.mark.parametrize("lam", [4.0, 10.0, 100.0, 1e4])
def test_penalty_gap_bound_holds_on_p_a(lam):
    """Lemma 4.3 (ii): lambda ||grad L*_lambda - grad F_S|| <= B over random x in X and
    samples (P-A: exactly ||A_bar^T (y* - v_bar)|| lambda / (1 + lambda), at most 4)."""
    stats, x = _stats(16), _points(16, 1)
    lam_t = torch.full((16,), lam, dtype=torch.float64)
    gap = torch.linalg.vector_norm(PA.penalty_gradient(x, lam_t, stats)
                                   - PA.hypergradient(x, stats), dim=-1) * lam
    assert float(gap.max()) <= _constants().gap


@pytest.mark.parametrize("lam", [4.0, 10.0, 1e3])
def test_penalty_smoothness_bound_holds_on_p_a(lam):
    """Lemma 4.3 (iii): ||grad L*(x) - grad L*(x')|| <= L_lambda ||x - x'|| for random pairs
    and finite differences (P-A: at most 2 rho + ||A_bar||^2 = 3)."""
    stats, x = _stats(32), _points(32, 2)
    step = 1e-4 * torch.randn(32, PA.x.dim, generator=torch.Generator().manual_seed(3),
                              dtype=torch.float64)
    lam_t = torch.full((32,), lam, dtype=torch.float64)
    for other in (_points(32, 4), PA.x.project(x + step)):
        change = torch.linalg.vector_norm(PA.penalty_gradient(x, lam_t, stats)
                                          - PA.penalty_gradient(other, lam_t, stats), dim=-1)
        moved = torch.linalg.vector_norm(x - other, dim=-1)
        assert float((change / moved).max()) <= _constants().smoothness


@pytest.mark.parametrize("lam", [4.0, 40.0])
def test_penalty_value_gap_and_initial_gap_hold_on_p_a(lam):
    """Lemma 4.3 (i): 0 <= F_S - L*_lambda <= L0f^2 / (2 lambda mu_g) (P-A: g_S(y^l) - g_S(y*)
    = ||y^l - y*||^2 / 2, f_S(y) = ||y||^2 / 2 - <y, v_bar> + const); Delta_F bound >=
    F_S(0) - min F_S over random x."""
    stats, x = _stats(16), _points(16, 5)
    lam_t = torch.full((16,), lam, dtype=torch.float64)
    y, y_lam = PA.inner_solution(x, stats), PA.penalty_solution(x, lam_t, stats)
    upper = (0.5 * (y_lam * y_lam - y * y) - (y_lam - y) * stats["v"]).sum(-1)
    gap = -(upper + lam * 0.5 * ((y_lam - y) ** 2).sum(-1))  # F - L*
    assert float(gap.min()) >= -1e-12
    assert float(gap.max()) <= _constants().value_gap / lam
    drop = PA.hyperobjective(torch.zeros_like(x), stats) - PA.hyperobjective(x, stats)
    assert float(drop.max()) <= _constants().initial_gap
    assert float(torch.linalg.vector_norm(PA.hypergradient(x, stats), dim=-1).max()) <= (
        math.hypot(1.0, PA.constants.l1g) * PA.constants.l0f)


def _conditions(alpha: float, params: dict, n: int, epsilon: float) -> tuple[bool, ...]:
    """The four conditions behind alpha_pred, restated from the method's plan at alpha's lambda and
    T (the test's oracle): lambda and T (and the prediction's beta and noise equal to the
    oracle's), beta <= alpha / 16, sigma (...) <= alpha / 16."""
    got = prediction_at(alpha, params, n, epsilon, DELTA)
    problem = DpBilevel.problem(DpBilevel().resolve(params))
    c, pen = problem.constants, penalty_constants(problem.constants, problem.x.radius)
    lam = max(2 * pen.gap / alpha, c.lambda_min)
    steps = math.ceil(256 / 3 * pen.smoothness * (pen.initial_gap + pen.value_gap / lam)
                      / alpha ** 2)
    plan = DpBilevel().plan(RunSpec(0, epsilon, DELTA, {**params, "n": n, "lam": lam,
                                                        "outer_steps": steps}), n)
    std = {name: plan.release(name).noise_multiplier * plan.release(name).sensitivity
           for name in ("outer", "inner_y", "inner_y_lambda")}
    tail = math.sqrt(problem.y.dim) + math.sqrt(2 * math.log(4 * steps / GAMMA))
    e_y = std["inner_y"] * tail
    e_lam = std["inner_y_lambda"] * tail + max(0.0, e_y - c.l0f / (lam * c.mu_g))
    beta = (c.l1f + lam * c.l1g) * e_lam + lam * c.l1g * e_y
    noise = std["outer"] / n * (math.sqrt(problem.x.dim) + math.sqrt(2 * math.log(
        steps / GAMMA)))
    return (got.lam == pytest.approx(lam, rel=1e-12) and got.outer_steps == steps
            and (got.bias, got.outer_noise) == pytest.approx((beta, noise), rel=1e-12),
            beta <= alpha / 16, noise <= alpha / 16)


@pytest.mark.parametrize(("params", "n", "epsilon"), CONFIGS)
def test_the_four_conditions_hold_at_alpha_pred_and_fail_just_below(params, n, epsilon):
    alpha = predicted_alpha(params, n, epsilon, DELTA).alpha
    assert all(_conditions(alpha, params, n, epsilon))
    below = _conditions(alpha * (1 - 1e-6), params, n, epsilon)
    assert below[0] and not all(below[1:])


def test_the_projection_share_enters_the_bias_where_e_y_exceeds_l0f_over_lambda():
    """At alpha = 2 (n = 2^14: lambda 21.5, T = 9,982) e_y = 3.3 > L0f / lambda = 0.26: the
    outer projection's share is in y~l's error and the bias (the oracle of the conditions)."""
    assert _conditions(2.0, {}, 16384, 2.0)[0]
    got = prediction_at(2.0, {}, 16384, 2.0, DELTA)
    assert got.inner_errors[0] > PA.constants.l0f / got.lam


def test_the_noise_is_the_plans_outer_sum_noise_over_n():
    """sigma = (2 C_out / n) sqrt(3 T / (2 rho*)) (zCDP split): the noise of the mean outer vector;
    the OP noise (2 L / (mu n)) sqrt(3 T / (2 rho*)) for y~ (L = L0g, mu = mu_g)."""
    p = predicted_alpha({}, 16384, 2.0, DELTA)
    scale = math.sqrt(3 * p.outer_steps / (2 * zcdp_budget(2.0, DELTA)))
    c = PA.constants
    assert p.sigma == pytest.approx(2 * c.outer_bound / 16384 * scale, rel=1e-12)
    assert p.inner_sigma[0] == pytest.approx(2 * c.l0g / (c.mu_g * 16384) * scale, rel=1e-12)


def test_alpha_pred_is_pinned_on_p_a():
    """e3's point (n = 2^14, epsilon 2, d_x 4, d_y 16): lambda at lambda_min = 4, T = 18, the
    bias binds; n = 2^24: lambda = 2 B / alpha = 17.1, T = 6,325."""
    p = predicted_alpha({}, 16384, 2.0, DELTA)
    assert (p.alpha, p.lam, p.outer_steps, p.binding) == (
        pytest.approx(50.74465345785446, rel=1e-8), 4.0, 18, "bias")
    assert p.bias == pytest.approx(3.171540840778223, rel=1e-8)
    assert p.outer_noise == pytest.approx(0.2917741000306004, rel=1e-8)
    large = predicted_alpha({}, 2 ** 24, 2.0, DELTA)
    assert (large.alpha, large.lam, large.outer_steps) == (
        pytest.approx(2.523582483420417, rel=1e-8), pytest.approx(17.055081436196126,
                                                                    rel=1e-7), 6325)


@settings(max_examples=15, deadline=None)
@given(st.integers(10, 30), st.integers(1, 6), st.floats(0.1, 16.0), st.floats(1.1, 8.0))
@example(log_n=15, more=1, epsilon=0.109375, factor=1.125)   # flat at T = 2
def test_alpha_pred_falls_with_n_and_epsilon(log_n, more, epsilon, factor):
    """Non-increasing in n and epsilon; flat only where alpha_pred sits on a step of T =
    ceil((256 / 3) L_lambda Delta_h / alpha^2): just below it T is larger and infeasible,
    whatever the noise (at small epsilon n the steps from T = 1 or 2 to the next)."""
    n = 2 ** log_n
    base = predicted_alpha({}, n, epsilon, DELTA)
    for other in (predicted_alpha({}, n * 2 ** more, epsilon, DELTA),
                  predicted_alpha({}, n, epsilon * factor, DELTA)):
        assert other.alpha <= base.alpha
        if other.alpha == base.alpha:
            below = prediction_at(base.alpha / (1 + RELATIVE_TOLERANCE), {}, n, epsilon, DELTA)
            assert not below.feasible and below.outer_steps > base.outer_steps


def _slope_in_n(params: dict, n: int) -> tuple[float, str, str]:
    low, high = (predicted_alpha(params, m, 2.0, DELTA) for m in (n, 10 * n))
    return math.log10(high.alpha / low.alpha), low.binding, high.binding


def test_alpha_pred_tends_to_the_lower_level_exponent_where_the_bias_binds():
    """lambda = 2 B / alpha and T ~ 1 / alpha^2 make beta ~ 1 / (alpha^2 n): slope -1/3 up to
    the logs of ln(T / gamma) (d_x = d_y = 1, n = 10^12 .. 10^13)."""
    slope, *binding = _slope_in_n({"d_x": 1, "d_y": 1}, 10 ** 12)
    assert binding == ["bias", "bias"]
    assert slope == pytest.approx(-1 / 3, abs=0.01)


def test_alpha_pred_tends_to_the_upper_level_exponent_where_the_noise_binds():
    """sigma ~ sqrt(T) / n ~ 1 / (alpha n): slope -1/2 (d_x = 10^4, d_y = 1)."""
    slope, *binding = _slope_in_n({"d_x": 10 ** 4, "d_y": 1}, 10 ** 6)
    assert binding == ["noise", "noise"]
    assert slope == pytest.approx(-1 / 2, abs=0.015)


def test_at_lambda_min_the_bias_term_falls_like_the_noise_term():
    """At e3's n lambda stays at lambda_min (A5), so beta ~ sqrt(T) / n ~ 1 / (alpha n) too:
    slope -1/2 with the bias binding."""
    slope, *binding = _slope_in_n({}, 4096)
    assert binding == ["bias", "bias"]
    assert slope == pytest.approx(-1 / 2, abs=0.015)


def _runs() -> pd.DataFrame:
    """Two methods at three (n, d_y) of P-A, three seeds, measured ||G|| = alpha_pred / 100
    times a seed factor (one method) and a constant (the other)."""
    rows = []
    for n, d_y in ((4096, 16), (16384, 16), (16384, 64)):
        alpha = predicted_alpha({"d_y": d_y}, n, 2.0, DELTA).alpha
        for seed, factor in enumerate((0.9, 1.0, 1.1)):
            base = {"paper": "bilevel", "experiment": "e3_theory",
                    "dataset": "pa_linear_response", "epsilon": 2.0, "delta": DELTA,
                    "seed": seed, "p_problem": "pa_linear_response", "p_instance": 0,
                    "p_n": n, "d_x": 4, "d_y": d_y, "p_gamma": GAMMA}
            rows.append({**base, "method": "dp_bilevel",
                         "gradient_mapping_norm": alpha / 100 * factor})
            rows.append({**base, "method": "bilevel_d1", "gradient_mapping_norm": 0.5})
    rows.append({**rows[0], "method": "np_pen", "epsilon": math.inf})
    return pd.DataFrame(rows)


def test_with_alpha_pred_solves_each_private_configuration():
    table = with_alpha_pred(_runs())
    private = table[np.isfinite(table["epsilon"])]
    first = private.iloc[0]
    assert first["alpha_pred"] == pytest.approx(
        predicted_alpha({"d_y": 16}, 4096, 2.0, DELTA).alpha, rel=1e-12)
    assert private["alpha_pred"].notna().all() and private["alpha_pred_lam"].eq(4.0).all()
    assert table.loc[~np.isfinite(table["epsilon"]), "alpha_pred"].isna().all()


def test_the_alpha_pred_table_fits_slope_one_and_the_ratio(tmp_path):
    table = TABLES["slopes_gradient_mapping_vs_alpha_pred"](_runs()).set_index("method")
    assert set(table.index) == {"dp_bilevel", "bilevel_d1"}
    a1 = table.loc["dp_bilevel"]
    assert a1["slope"] == pytest.approx(1.0, abs=1e-9)
    assert a1["slope_ci_low"] <= 1.0 <= a1["slope_ci_high"]
    assert a1["ratio_median"] == pytest.approx(0.01, rel=1e-9)
    assert (a1["configurations"], a1["seeds"], a1["binding"]) == (3, 3, "bias")
    assert table.loc["bilevel_d1", "slope"] == pytest.approx(0.0, abs=1e-9)
    assert collapse_table(_runs(), "gradient_mapping_norm", against="rate").loc[
        0, "against"] == "rate"
    out = [tmp_path / "collapse.png"]
    FIGURES["gradient_mapping_vs_alpha_pred"](_runs(), FigureRequest(out))
    assert out[0].stat().st_size > 0
