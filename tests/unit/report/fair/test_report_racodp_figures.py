"""RaCO-DP Figs. 5a (FNR trade-off), 8a (clip sweep), 8b (soft vs hard dual) and 9 (low budgets)
drawn through the figure registry from hand-made results tables with known summaries."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import same_color
from scipy import stats

from dpminimax.report.aggregate import ResultsTableError
from dpminimax.report.fair.constraint_value import value_column, with_constraint_values
from dpminimax.report.registry import FigureRequest, get_drawer

T_975_2 = stats.t.ppf(0.975, 2)  # three seeds: Student-t quantile with 2 degrees of freedom


def _draw(figure, table, tmp_path):
    paths = [tmp_path / f"{figure}.pdf", tmp_path / f"{figure}.png"]
    fig = get_drawer(figure)(table, FigureRequest(out_paths=paths))
    assert all(p.is_file() and p.stat().st_size > 1000 for p in paths)
    assert paths[0].read_bytes().startswith(b"%PDF")
    assert plt.get_fignums() == []
    return fig


def _legend(fig):
    return [t.get_text() for t in fig.legends[0].get_texts()]


def _data(line, axis):
    """A line's x or y data as floats (errorbar keeps it as an object array)."""
    return np.asarray(line.get_xdata() if axis == "x" else line.get_ydata(), dtype=float)


def _offsets(seeds):
    """Per-seed offsets with mean 0 and sample std 0.01 for three seeds (0 for one seed)."""
    return {0: 0.0} if seeds == (0,) else {0: -0.01, 1: 0.0, 2: 0.01}


# ---------------------------------------------------------------- achieved constraint values

def test_constraint_value_is_violation_plus_gamma_for_the_named_constraint_only():
    table = pd.DataFrame({
        "p_constraint": ["false_negative_rate", "false_negative_rate", "demographic_parity"],
        "p_gamma": [0.1, 0.0, 0.05],
        "train_max_constraint_violation": [0.05, 0.62, 0.01],
        "test_max_constraint_violation": [-0.02, 0.6, 0.0],
    })
    rows = with_constraint_values(table, "false_negative_rate")
    assert len(rows) == 2
    np.testing.assert_allclose(rows[value_column("train")], [0.15, 0.62])
    np.testing.assert_allclose(rows[value_column("test")], [0.08, 0.6])
    with pytest.raises(ValueError, match="equalized_odds"):
        with_constraint_values(table, "equalized_odds")
    with pytest.raises(ResultsTableError, match="test_max_constraint_violation"):
        with_constraint_values(table.drop(columns="test_max_constraint_violation"),
                               "false_negative_rate")
    with pytest.raises(ValueError, match="split"):
        value_column("val")


# ---------------------------------------------------------------- Fig. 5a

FNR_GAMMAS = (0.1, 0.2, 0.3)


def _fnr_table(seeds=(0, 1, 2)):
    """RaCO-DP at eps 1 and non-private SGDA: achieved test FNR = gamma + 0.05 (+ seed offset),
    error = 0.2 - 0.1 gamma; plus a demographic-parity run that must not be drawn."""
    offsets = _offsets(seeds)
    rows = []
    for method, eps in (("racodp", 1.0), ("racodp_nonprivate", math.inf)):
        for gamma in FNR_GAMMAS:
            for seed in seeds:
                rows.append({
                    "dataset": "adult", "method": method, "epsilon": eps, "seed": seed,
                    "p_constraint": "false_negative_rate", "p_gamma": gamma,
                    "test_accuracy": 0.8 + 0.1 * gamma + offsets[seed],
                    "test_max_constraint_violation": 0.05 + offsets[seed],
                    "train_max_constraint_violation": 0.02,
                })
    rows.append({"dataset": "adult", "method": "racodp", "epsilon": 3.0, "seed": 0,
                 "p_constraint": "demographic_parity", "p_gamma": 0.05, "test_accuracy": 0.8,
                 "test_max_constraint_violation": 0.0, "train_max_constraint_violation": 0.0})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seeds", [(0, 1, 2), (0,)])
def test_fig5a_fnr_tradeoff_plots_achieved_fnr_against_error(tmp_path, seeds):
    fig = _draw("tradeoff_fnr", _fnr_table(seeds), tmp_path)
    (ax,) = fig.axes  # one dataset, one private budget (the eps = 3 DP run is not an FNR run)
    assert ax.get_title() == "adult, ε = 1"
    assert ax.get_ylabel() == "False negative rate (test)"
    assert ax.get_xlabel() == "Misclassification error"
    assert set(_legend(fig)) == {"RaCO-DP", "Non-private SGDA (ε = ∞)"}
    (reference,) = [li for li in ax.get_lines() if li.get_label() == "Non-private SGDA (ε = ∞)"]
    assert reference.get_linestyle() == ":"
    (line,) = [li for li in ax.get_lines() if li.get_label() == "RaCO-DP"]
    np.testing.assert_allclose(line.get_ydata(), np.array(FNR_GAMMAS) + 0.05, atol=1e-12)
    np.testing.assert_allclose(line.get_xdata(), 0.2 - 0.1 * np.array(FNR_GAMMAS), atol=1e-12)


def test_fig5a_without_an_fnr_run_is_an_error(tmp_path):
    table = _fnr_table()
    with pytest.raises(ValueError, match="false_negative_rate"):
        get_drawer("tradeoff_fnr")(table[table["p_constraint"] == "demographic_parity"],
                                   FigureRequest(out_paths=[tmp_path / "x.png"]))


# ---------------------------------------------------------------- Fig. 8a

CLIPS = (0.5, 2.0, 12.5, 30.0)


def _clip_table(seeds=(0, 1, 2)):
    """Non-private SGDA, FNR target 0: train FNR = 0.7 / (1 + C) (+ offset), test = train + 0.01;
    one unclipped run (C = inf) that the sweep leaves out."""
    offsets = _offsets(seeds)
    rows = [{"dataset": "adult", "method": "racodp_nonprivate", "epsilon": math.inf, "seed": seed,
             "p_constraint": "false_negative_rate", "p_gamma": 0.0, "p_clip": clip,
             "train_max_constraint_violation": 0.7 / (1 + clip) + offsets[seed],
             "test_max_constraint_violation": 0.7 / (1 + clip) + 0.01 + offsets[seed]}
            for clip in (*CLIPS, math.inf) for seed in seeds]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seeds", [(0, 1, 2), (0,)])
def test_fig8a_clip_sweep_draws_train_and_test_fnr_against_c_with_the_target(tmp_path, seeds):
    fig = _draw("clip_sweep_fnr", _clip_table(seeds), tmp_path)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    np.testing.assert_allclose(ax.get_xticks(), CLIPS)
    assert ax.get_xlabel() == "Clipping norm C"
    assert ax.get_ylabel() == "Achieved false negative rate (hard)"
    labels = _legend(fig)
    assert labels == ["target γ = 0", "Non-private SGDA, γ = 0, train",
                      "Non-private SGDA, γ = 0, test"]
    lines = {li.get_label(): li for li in ax.get_lines()}
    target = lines["target γ = 0"]
    assert same_color(target.get_color(), "#D62728") and target.get_linestyle() == "--"
    assert list(target.get_ydata()) == [0, 0]
    expected = 0.7 / (1 + np.array(CLIPS))
    train = [c for c in ax.containers if c.get_label().endswith("train")][0]
    test = [c for c in ax.containers if c.get_label().endswith("test")][0]
    np.testing.assert_allclose(_data(train.lines[0], "x"), CLIPS)  # C = inf is left out
    np.testing.assert_allclose(_data(train.lines[0], "y"), expected, atol=1e-12)
    np.testing.assert_allclose(_data(test.lines[0], "y"), expected + 0.01, atol=1e-12)
    assert train.lines[0].get_linestyle() == "-" and test.lines[0].get_linestyle() == "--"
    if len(seeds) == 3:  # 95% t-interval: sample std 0.01 over 3 seeds
        segment = train.lines[2][0].get_segments()[0]
        half = T_975_2 * 0.01 / math.sqrt(3)
        np.testing.assert_allclose(segment[:, 1], [expected[0] - half, expected[0] + half])


def test_fig8a_without_a_finite_clip_is_an_error(tmp_path):
    table = _clip_table()
    with pytest.raises(ValueError, match="finite clipping norm"):
        get_drawer("clip_sweep_fnr")(table[np.isinf(table["p_clip"])],
                                     FigureRequest(out_paths=[tmp_path / "x.png"]))


# ---------------------------------------------------------------- Fig. 8b

DUAL_GAMMAS = (0.02, 0.05, 0.1, 0.15)


def _dual_table(seeds=(0, 1, 2)):
    """RaCO-DP at eps 1: DP violation = gamma + 0.01 (soft) / gamma (hard); error = 0.2 - gamma
    (soft) / 0.21 - gamma (hard)."""
    offsets = _offsets(seeds)
    rows = [{"dataset": "adult", "method": "racodp", "epsilon": 1.0, "seed": seed,
             "p_gamma": gamma, "p_dual_update": dual,
             "test_error": (0.2 if dual == "soft" else 0.21) - gamma + offsets[seed],
             "dp_violation": gamma + (0.01 if dual == "soft" else 0.0) + offsets[seed]}
            for dual in ("soft", "hard") for gamma in DUAL_GAMMAS for seed in seeds]
    rows.append({"dataset": "adult", "method": "dp_sgd", "epsilon": 1.0, "seed": 0,
                 "p_gamma": np.nan, "p_dual_update": np.nan, "test_error": 0.16,
                 "dp_violation": 0.18})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seeds", [(0, 1, 2), (0,)])
def test_fig8b_soft_hollow_hard_solid_with_dashed_targets(tmp_path, seeds):
    fig = _draw("dual_update_dp", _dual_table(seeds), tmp_path)
    (ax,) = fig.axes
    assert ax.get_title() == "adult, ε = 1"
    assert ax.get_ylabel() == "Demographic parity violation"
    assert _legend(fig) == ["Soft dual update", "Hard dual update",
                            *(f"target γ = {g:g}" for g in DUAL_GAMMAS)]
    points = {dual: sorted((li for li in ax.get_lines() if li.get_gid() == dual),
                           key=lambda li: li.get_ydata()[0]) for dual in ("soft", "hard")}
    assert [len(p) for p in points.values()] == [4, 4]
    assert all(li.get_markerfacecolor() == "none" for li in points["soft"])
    assert all(same_color(li.get_markerfacecolor(), li.get_color()) for li in points["hard"])
    gammas = np.array(DUAL_GAMMAS)
    np.testing.assert_allclose([li.get_ydata()[0] for li in points["soft"]], gammas + 0.01,
                               atol=1e-12)
    np.testing.assert_allclose([li.get_xdata()[0] for li in points["hard"]], 0.21 - gammas,
                               atol=1e-12)
    targets = [li for li in ax.get_lines() if li.get_linestyle() == "--"]
    assert sorted(li.get_ydata()[0] for li in targets) == list(DUAL_GAMMAS)
    for target, point in zip(sorted(targets, key=lambda li: li.get_ydata()[0]), points["hard"],
                             strict=True):  # a target has its points' colour
        assert same_color(target.get_color(), point.get_color())
    bars = [c for c in ax.collections if c.get_segments()]
    assert len(bars) == (16 if len(seeds) == 3 else 0)  # x and y bars of 8 points


def test_fig8b_needs_the_dual_update_column(tmp_path):
    with pytest.raises(ResultsTableError, match="p_dual_update"):
        get_drawer("dual_update_dp")(_dual_table().drop(columns="p_dual_update"),
                                     FigureRequest(out_paths=[tmp_path / "x.png"]))


# ---------------------------------------------------------------- Fig. 9

def _low_budget_table(seeds=(0, 1, 2)):
    """RaCO-DP at eps 0.01 / 0.1 / 1 (T = 5 / 82 / 1990-2000) and a non-private run (not drawn);
    at eps = 0.01 the DP violations of the seeds are gamma + {-0.1, 0, 0.1} (sample std 0.1)."""
    spread = {0.01: 0.1, 0.1: 0.02, 1.0: 0.01}
    steps = {0.01: 5, 0.1: 82, 1.0: 2000}
    offsets = _offsets(seeds)
    rows = []
    for eps in spread:
        for gamma in (0.05, 0.1, 0.2):
            for seed in seeds:
                noise = offsets[seed] * spread[eps] / 0.01
                rows.append({"dataset": "adult", "method": "racodp", "epsilon": eps,
                             "seed": seed, "p_gamma": gamma,
                             "p_steps": steps[eps] - (10 * seed if eps == 1.0 else 0),
                             "test_accuracy": 0.8 + eps / 20 - gamma / 10,
                             "dp_violation": gamma + noise})
    rows.append({"dataset": "adult", "method": "racodp_nonprivate", "epsilon": math.inf,
                 "seed": 0, "p_gamma": 0.1, "p_steps": 5000, "test_accuracy": 0.85,
                 "dp_violation": 0.1})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seeds", [(0, 1, 2), (0,)])
def test_fig9_one_series_per_budget_with_its_step_count_and_95_ci(tmp_path, seeds):
    fig = _draw("low_budget_dp", _low_budget_table(seeds), tmp_path)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "Misclassification error"
    last = "2000" if seeds == (0,) else "1980–2000"
    assert _legend(fig) == ["ε = 0.01 (T = 5)", "ε = 0.1 (T = 82)", f"ε = 1 (T = {last})"]
    series = {c.get_label(): c for c in ax.containers}
    assert len(series) == 3  # the non-private run is not a budget of this figure
    low = series["ε = 0.01 (T = 5)"]
    np.testing.assert_allclose(_data(low.lines[0], "y"), [0.05, 0.1, 0.2], atol=1e-12)
    np.testing.assert_allclose(_data(low.lines[0], "x"),
                               1 - (0.8 + 0.01 / 20 - np.array([0.05, 0.1, 0.2]) / 10))
    if len(seeds) == 3:
        y_bars = low.lines[2][1].get_segments()
        half = T_975_2 * 0.1 / math.sqrt(3)
        np.testing.assert_allclose(y_bars[1][:, 1], [max(0.1 - half, 0.0), 0.1 + half],
                                   atol=1e-12)  # a violation's interval stays in [0, 1]


def test_fig9_draws_the_noiseless_control_apart_in_its_budgets_colour(tmp_path):
    table = _low_budget_table()
    control = table[table["method"] == "racodp"].assign(
        method="racodp_noise_off", dp_violation=lambda t: t["dp_violation"] + 0.5)
    fig = _draw("low_budget_dp", pd.concat([table, control]), tmp_path)
    (ax,) = fig.axes
    series = {c.get_label(): c for c in ax.containers}
    assert len(series) == 6
    private, noiseless = series["ε = 0.1 (T = 82)"], series["ε = 0.1, noise off (T = 82)"]
    np.testing.assert_allclose(_data(noiseless.lines[0], "y"),
                               _data(private.lines[0], "y") + 0.5, atol=1e-12)
    assert noiseless.lines[0].get_color() == private.lines[0].get_color()
    assert (noiseless.lines[0].get_linestyle(), noiseless.lines[0].get_marker()) == ("--", "s")
    with pytest.raises(ValueError, match="private"):  # a control alone is no private run
        get_drawer("low_budget_dp")(control, FigureRequest(out_paths=[tmp_path / "x.png"]))


def test_fig9_without_a_private_run_is_an_error(tmp_path):
    table = _low_budget_table()
    with pytest.raises(ValueError, match="private"):
        get_drawer("low_budget_dp")(table[table["method"] == "racodp_nonprivate"],
                                    FigureRequest(out_paths=[tmp_path / "x.png"]))
