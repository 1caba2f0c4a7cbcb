"""DP-DRO (paper 004) report: Figs. 1-3 (curves over training) and Tables 2-3."""

import json
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpminimax.report.dro.tables import panel_epsilon, table2_mia, table3_accuracy, table3_objective
from dpminimax.report.registry import TABLES, FigureRequest, get_drawer

PRIVATE = ("dp_sgda_dro", "dp_double_spider", "dp_recursive_spider")
DATASETS = ("mnist-st", "celeba-blond")  # celeba-blond is a stand-in; mnist-st comes last


def accuracy(dataset, method, eps, seed):
    """A distinct, exactly known accuracy (a fraction) per run."""
    base = {"dp_sgda_dro": 0.50, "dp_double_spider": 0.60, "dp_recursive_spider": 0.70,
            "scdro": 0.80}[method]
    return base + (0.05 if dataset == "celeba-blond" else 0.0) \
        + (0.0 if math.isinf(eps) else 0.01 * eps) + 0.02 * seed


def curve(eps, seed, method):
    return json.dumps([
        {"step": step, "test_accuracy": 0.5, "test_auc": 0.6 + 0.01 * step / 10 + 0.01 * seed,
         "test_f1": 0.5 + 0.01 * seed, "dro_gradient_norm": 1.0 / (1 + step) + 0.1 * seed,
         "dro_lambda": 1.0, "train_loss": 0.7, "eta": 0.1}
        for step in (0, 10, 20, 30)])


@pytest.fixture
def runs():
    rows = []
    for dataset in DATASETS:
        # celeba-blond has no run at epsilon 1: its panel falls back to epsilon 0.5
        epsilons = (0.5, 4.0) if dataset == "celeba-blond" else (1.0, 4.0)
        grid = [(m, e) for m in PRIVATE for e in epsilons] + [("scdro", math.inf)]
        for method, eps in grid:
            for seed in (0, 1):
                uniform = 0.9 if method == "dp_double_spider" else 0.51 + 0.01 * seed
                rows.append({
                    "paper": "004", "experiment": "dro", "dataset": dataset,
                    "method": method, "epsilon": eps, "delta": 1e-5, "seed": seed,
                    "test_accuracy": accuracy(dataset, method, eps, seed),
                    "test_auc": 0.7 + 0.1 * seed, "test_f1": 0.6 + 0.2 * seed,
                    "dro_gradient_norm": 0.1, "mia_auc_uniform": uniform,
                    "mia_auc_stratified": 0.5 + 0.02 * seed,
                    "mia_auc_ceiling": (1.0 if math.isinf(eps)
                                        else math.exp(eps) / (1 + math.exp(eps))),
                    "mia_auc_class_cap": 0.70 + 0.01 * seed,
                    "mia_members": 100, "data_standin": dataset == "celeba-blond",
                    "curve": curve(eps, seed, method), "p_steps": 30,
                })
    return pd.DataFrame(rows)


def written(paths):
    return all(p.is_file() and p.stat().st_size > 1000 for p in paths)


@pytest.mark.parametrize("figure", ["dro_gradient_norm_curves", "dro_auc_curves",
                                    "dro_f1_curves"])
def test_curve_figures_are_written(runs, tmp_path, figure):
    paths = [tmp_path / f"{figure}.pdf", tmp_path / f"{figure}.png"]
    fig = get_drawer(figure)(runs, FigureRequest(out_paths=paths))
    assert written(paths)
    assert paths[0].read_bytes().startswith(b"%PDF")
    assert paths[1].read_bytes().startswith(b"\x89PNG")
    number = {"dro_gradient_norm_curves": 1, "dro_auc_curves": 2, "dro_f1_curves": 3}[figure]
    assert f"Fig. {number}" in fig.subfigs[0].get_suptitle()
    titles = [ax.get_title() for ax in fig.axes]
    # the paper's order: celeba-blond before mnist-st; celeba-blond falls back to epsilon 0.5
    assert [t.splitlines()[0] for t in titles] == ["celeba-blond (ε = 0.5: no run at ε = 1)",
                                                   "mnist-st (ε = 1)"]
    assert [ax.get_yscale() for ax in fig.axes] == (
        ["log"] * 2 if figure == "dro_gradient_norm_curves" else ["linear"] * 2)
    # one line per method (3 private + SCDRO dashed) in each panel, legend once
    for ax in fig.axes:
        assert len(ax.get_lines()) == 4
        assert [line.get_linestyle() for line in ax.get_lines()][-1] == "--"
    legends = [legend for sub in fig.subfigs for legend in sub.legends]
    assert len(legends) == 1
    legend = [t.get_text() for t in legends[0].get_texts()]
    assert legend == ["DP-SGDA", "DP Double-SPIDER", "DP Recursive-SPIDER",
                      "SCDRO (non-private), ε = ∞"]
    # the stand-in panel (and only it) says so in its title
    stamped = ["NOT RUN" in ax.get_title() for ax in fig.axes]
    assert stamped == [True, False]
    assert plt.get_fignums() == []


def test_curve_values_are_means_over_seeds(runs, tmp_path):
    fig = get_drawer("dro_auc_curves")(runs, FigureRequest(out_paths=[tmp_path / "a.png"]))
    line = fig.axes[1].get_lines()[0]                # mnist-st, DP-SGDA at epsilon 1
    np.testing.assert_allclose(line.get_xdata(), [0, 10, 20, 30])
    np.testing.assert_allclose(line.get_ydata(), [0.605, 0.615, 0.625, 0.635])


def test_panel_epsilon_fallback():
    assert panel_epsilon(pd.Series([0.5, 1.0, math.inf]))[0] == 1.0
    eps, note = panel_epsilon(pd.Series([4.0, 0.5, math.inf]))
    assert eps == 0.5 and "no run at ε = 1" in note
    assert math.isnan(panel_epsilon(pd.Series([math.inf]))[0])


def test_table3_values_and_order(runs):
    table = TABLES["table3_accuracy"](runs)
    assert len(table) == 2 * (3 * 2 + 1)
    # the paper's order: dataset, then epsilon (inf last), then method
    assert list(table["dataset"].iloc[[0, -1]]) == ["celeba-blond", "mnist-st"]
    mnist = table[table["dataset"] == "mnist-st"]
    assert list(mnist["epsilon"]) == [1.0] * 3 + [4.0] * 3 + [math.inf]
    assert list(mnist["method"])[:3] == list(PRIVATE)
    assert list(mnist["label"])[:3] == ["DP-SGDA", "DP Double-SPIDER", "DP Recursive-SPIDER"]
    row = table[(table["dataset"] == "celeba-blond") & (table["method"] == "dp_double_spider")
                & (table["epsilon"] == 0.5)].iloc[0]
    # accuracies 0.655 and 0.675 -> 66.5 % mean, std (ddof 1) = 0.02 / sqrt(2) * 100
    assert row["n_seeds"] == 2
    assert row["accuracy_mean"] == pytest.approx(66.5)
    assert row["accuracy_std"] == pytest.approx(2.0 / math.sqrt(2))
    assert row["auc_mean"] == pytest.approx(0.75)
    assert row["f1_mean"] == pytest.approx(0.7)
    assert bool(row["data_standin"])
    assert not table.loc[table["dataset"] == "mnist-st", "data_standin"].any()
    scdro = table[(table["dataset"] == "mnist-st") & (table["method"] == "scdro")].iloc[0]
    assert scdro["accuracy_mean"] == pytest.approx(81.0)
    assert table3_accuracy(runs.iloc[:0]).empty


def test_table2_flags(runs):
    table = table2_mia(runs)
    assert len(table) == 14
    ds = table[table["method"] == "dp_double_spider"]
    # 0.9 is above the epsilon-0.5 and epsilon-1 ceilings (0.622, 0.731), not the epsilon-4 one
    assert list(zip(ds["epsilon"], ds["uniform_above_ceiling"], strict=True)) == [
        (0.5, True), (4.0, False), (1.0, True), (4.0, False)]
    assert not table["stratified_above_ceiling"].any()
    sgda = table[(table["method"] == "dp_sgda_dro") & (table["epsilon"] == 1.0)].iloc[0]
    assert sgda["mia_auc_uniform_mean"] == pytest.approx(0.515)
    assert sgda["mia_auc_uniform_std"] == pytest.approx(0.01 / math.sqrt(2))
    assert sgda["mia_auc_uniform"] == "0.5150 ± 0.0071"
    assert sgda["mia_auc_ceiling"] == pytest.approx(math.e / (1 + math.e))
    assert not bool(sgda["uniform_above_ceiling"])
    # the class-confound cap: mean over seeds; only Double-SPIDER's 0.9 reads beyond the class
    assert sgda["mia_auc_class_cap"] == pytest.approx(0.705)
    assert set(table.loc[table["uniform_above_class_cap"], "method"]) == {"dp_double_spider"}
    assert table.loc[table["dataset"] == "celeba-blond", "data_standin"].all()
    assert list(table["dataset"].drop_duplicates()) == ["celeba-blond", "mnist-st"]


def test_table3_objective_decides_by_the_interval_against_init_and_prior():
    """Three seeds per cell: an interval wholly below min(Phi(init), prior) is "below", one
    wholly above "not below", one straddling it "inconclusive"; one seed has no interval. The
    prior's Phi, recorded by some runs only, is filled per dataset."""
    def cell(method, values, prior=math.nan):
        return [{"experiment": "table3", "dataset": "mnist-st", "method": method,
                 "epsilon": 1.0, "seed": seed, "dro_objective": value,
                 "trivial_dro_objective": 0.70, "prior_dro_objective": prior}
                for seed, value in enumerate(values)]
    runs = pd.DataFrame(cell("dp_sgda_dro", [0.50, 0.52, 0.54], prior=1.19)
                        + cell("privatediff_dro", [0.90, 1.00, 1.10])
                        + cell("dp_double_spider", [0.60, 0.70, 0.80])
                        + cell("dp_recursive_spider", [0.40]))
    table = table3_objective(runs).set_index("method")
    assert table.loc["dp_sgda_dro", "verdict"] == "below"
    assert table.loc["privatediff_dro", "verdict"] == "not below"
    assert table.loc["dp_double_spider", "verdict"] == "inconclusive"
    assert table.loc["dp_recursive_spider", "verdict"] == "inconclusive"
    assert (table["phi_prior"] == 1.19).all()
    low, high = table.loc["dp_sgda_dro", ["phi_final_low", "phi_final_high"]]
    half = 4.302652729911275 * 0.02 / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(3)
    assert (low, high) == (pytest.approx(0.52 - half), pytest.approx(0.52 + half))
    # a prior below Phi(init) is the reference: 0.50-0.54 is not below a prior of 0.45
    lower_prior = runs.assign(prior_dro_objective=0.45)
    assert table3_objective(lower_prior).set_index("method").loc[
        "dp_sgda_dro", "verdict"] == "not below"


def test_table3_objective_splits_a_cell_by_a_swept_parameter():
    """``by=("p_weight_cap",)``: each weight cap of one (dataset, method, epsilon) gets its own
    interval and verdict (issue #37's weight-cap sweep); without it the seeds of both pool."""
    runs = pd.DataFrame([
        {"experiment": "sweep", "dataset": "mnist-st", "method": "dp_double_spider",
         "epsilon": 10.0, "seed": seed, "p_weight_cap": cap, "dro_objective": value,
         "trivial_dro_objective": 0.70, "prior_dro_objective": 1.19}
        for cap, values in ((5.0, [1.10, 1.15, 1.20]), (100.0, [0.40, 0.45, 0.50]))
        for seed, value in enumerate(values)])
    table = table3_objective(runs, by=("p_weight_cap",))
    assert list(table["p_weight_cap"]) == [5.0, 100.0]
    assert list(table["verdict"]) == ["not below", "below"]
    assert list(table["n_seeds"]) == [3, 3]
    pooled = table3_objective(runs)
    assert len(pooled) == 1 and pooled["verdict"].iat[0] == "inconclusive"
    with pytest.raises(ValueError, match="p_lr"):
        table3_objective(runs, by=("p_lr",))
