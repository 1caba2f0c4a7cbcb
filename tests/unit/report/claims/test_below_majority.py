"""Issue 38 item 4: a classification run not better than the majority-class predictor is
flagged (``below_majority``, from an exact McNemar lower bound over the test rows), logged, and
drawn hollow in the trade-off figures."""

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import same_color
from scipy.stats import binomtest

from dpminimax.metrics import majority_gain_lower_bound
from dpminimax.report.claims.trivial import HOLLOW_LABEL
from dpminimax.report.registry import FigureRequest, get_drawer
from dpminimax.tasks.classification import below_majority

# ---------------------------------------------------------------- the bound


def test_the_bound_on_a_hand_computed_case():
    """Perfect predictions, majority 0. 5 ones of 10: b = 5, c = 0, the Clopper-Pearson bound
    on b / d is 0.05^(1/5) = 0.5493, so 5/10 (2 * 0.5493 - 1) = 0.0493 > 0 (McNemar p = 1/32).
    4 ones of 10: 0.05^(1/4) = 0.4729 < 1/2, so 4/10 (2 * 0.4729 - 1) = -0.0217 (p = 1/16)."""
    five = np.array([0] * 5 + [1] * 5)
    assert majority_gain_lower_bound(five, five, 0) == pytest.approx(
        0.5 * (2 * 0.05 ** (1 / 5) - 1), rel=1e-9)
    assert majority_gain_lower_bound(five, five, 0) == pytest.approx(0.04928, abs=1e-5)
    four = np.array([0] * 6 + [1] * 4)
    assert majority_gain_lower_bound(four, four, 0) == pytest.approx(-0.02170, abs=1e-5)


@pytest.mark.parametrize("b", range(0, 14))
@pytest.mark.parametrize("c", [0, 1, 3, 8])
def test_the_bound_is_positive_exactly_when_mcnemar_rejects(b, c):
    """b rows only the run gets right (label 1), c only the majority (label 0), 5 both."""
    y = np.array([1] * b + [0] * c + [0] * 5)
    pred = np.array([1] * b + [1] * c + [0] * 5)
    low = majority_gain_lower_bound(y, pred, 0)
    p = binomtest(b, b + c, 0.5, alternative="greater").pvalue if b + c else 1.0
    assert (low > 0) == (p < 0.05)
    assert low <= (b - c) / y.size  # a lower bound on the observed gain


# ---------------------------------------------------------------- the flag on runs

def _labels(n=10_000, majority_rate=0.75, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(n) > majority_rate).astype(int)  # class 0 is the majority


def _flip(y, rows):
    pred = y.copy()
    pred[rows] = 1 - pred[rows]
    return pred


@pytest.mark.parametrize("constant", [0, 1])
def test_a_constant_predictor_is_flagged(constant):
    y = _labels()
    flag = below_majority("m", 0, y, np.full(y.size, constant), majority=0)
    assert flag["below_majority"]
    assert flag["majority_gain_low"] <= 0


def test_near_chance_runs_are_flagged_and_a_clearly_better_one_is_not(caplog):
    """Accuracy 0.69 against a majority rate of ~0.75 (Fig. 9 at eps 1: b = 1000, c = 1600);
    0.2 percentage points above it with 2000 discordant rows (b = 1010, c = 990: McNemar
    p ~ 0.34); 0.85 (b ~ 1500, c = 500): clearly better."""
    y = _labels()
    ones, zeros = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    majority_rate = float(np.mean(y == 0))
    below = _flip(y, np.r_[ones[:ones.size - 1000], zeros[:1600]])
    near = _flip(y, np.r_[ones[:ones.size - 1010], zeros[:990]])
    better = _flip(y, np.r_[ones[:1000], zeros[:500]])
    with caplog.at_level("WARNING", logger="dpminimax"):
        flags = [below_majority("racodp", run, y, pred, majority=0)
                 for run, pred in enumerate((below, near, better))]
    assert [f["below_majority"] for f in flags] == [True, True, False]
    assert np.mean(below == y) == pytest.approx(majority_rate - 0.06)
    assert np.mean(near == y) == pytest.approx(majority_rate + 0.002)
    assert flags[2]["majority_gain_low"] == pytest.approx(
        np.mean(better == y) - majority_rate, abs=0.02)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert warnings[0].startswith("racodp run 0 is not better than the majority class")
    assert f"test accuracy {np.mean(below == y):.4f}, majority class {majority_rate:.4f}" \
        in warnings[0]


# ---------------------------------------------------------------- the figures

def _white_faced(ax):
    """The points drawn with white-faced (hollow) markers."""
    return {(round(float(x), 9), round(float(y), 9))
            for line in ax.get_lines() if same_color(line.get_markerfacecolor(), "white")
            for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)}


def _runs(flagged_gamma):
    """RaCO-DP on Adult at eps 1 over three gammas, three seeds; one seed of ``gamma =
    flagged_gamma`` is below the majority class."""
    rows = [{"dataset": "adult", "method": "racodp", "epsilon": 1.0, "seed": seed,
             "p_gamma": gamma, "p_steps": 100, "test_accuracy": 0.8 - gamma / 10,
             "dp_violation": gamma, "trivial_test_error": 0.25, "trivial_dp_violation": 0.0,
             "below_majority": gamma == flagged_gamma and seed == 0}
            for gamma in (0.05, 0.1, 0.2) for seed in range(3)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("figure", ["tradeoff_dp", "low_budget_dp"])
def test_a_flagged_run_is_drawn_hollow(figure, tmp_path):
    fig = get_drawer(figure)(_runs(0.1), FigureRequest(out_paths=[tmp_path / "f.png"]))
    (ax,) = fig.axes
    assert _white_faced(ax) == {(round(1 - (0.8 - 0.01), 9), 0.1)}
    assert HOLLOW_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]
    clean = get_drawer(figure)(_runs(math.nan), FigureRequest(out_paths=[tmp_path / "g.png"]))
    assert _white_faced(clean.axes[0]) == set()
    assert HOLLOW_LABEL not in [t.get_text() for t in clean.legends[0].get_texts()]
