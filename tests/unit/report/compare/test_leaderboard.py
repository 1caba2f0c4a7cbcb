"""Leaderboards decided by intervals (dpminimax.report.compare.leaderboard, issue 39 item 3) on
small synthetic runs tables with known answers, and ``dpminimax compare`` end to end."""

from __future__ import annotations

import itertools
import json
import math
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpminimax.algorithms import get_method
from dpminimax.cli import main
from dpminimax.report.compare import leaderboard as lb
from dpminimax.report.compare.dominance import error_at, pareto_front

ROOT = Path(__file__).resolve().parents[4]

#: Per-seed objective (lower is better) of each method; the trivial output's is 0.25.
OBJECTIVE = {
    "clear": [0.10, 0.11, 0.09, 0.10, 0.10],      # the clear winner
    "close": [0.08, 0.125, 0.10, 0.135, 0.07],    # mean 0.102: tied with "clear" by intervals
    "middle": [0.20, 0.21, 0.19, 0.20, 0.20],
    "worse": [0.30, 0.31, 0.29, 0.30, 0.30],      # worse than the trivial baseline
}
TRIVIAL_OBJECTIVE = 0.25
KL = lb.FAMILIES["kl_dro"]


def _runs(objective=OBJECTIVE, *, delta=1e-5, epsilon=1.0, dataset="mnist-st") -> pd.DataFrame:
    return pd.DataFrame([
        {"paper": "dpdro", "experiment": "table3", "dataset": dataset, "method": method,
         "epsilon": epsilon, "delta": delta, "accountant": "rdp", "split": "s1", "seed": seed,
         "p_lr": 0.1, "dro_objective": value, "trivial_dro_objective": TRIVIAL_OBJECTIVE,
         "data_standin": False}
        for method, values in objective.items() for seed, value in enumerate(values)])


def _board(runs: pd.DataFrame, **kwargs) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, _ = lb.select(runs, KL, "dro_objective")
    return lb.leaderboard(rows, KL, "dro_objective", **kwargs)


def _row(board: pd.DataFrame, method: str) -> pd.Series:
    (index,) = np.flatnonzero(board["method"] == method)
    return board.iloc[index]


def test_clear_winner_ties_and_the_trivial_baseline():
    board, pairs = _board(_runs())
    assert sorted(board["method"]) == sorted([*OBJECTIVE, "trivial"])
    clear, close = _row(board, "clear"), _row(board, "close")
    assert clear["value"] == pytest.approx(0.10) and close["value"] == pytest.approx(0.102)
    assert clear["low"] < 0.10 < clear["high"] < 0.11
    assert clear["rank"] == 1 and close["rank"] == 2
    assert clear["rank_low"] == 1 and close["rank_low"] == 1  # the ranks' intervals overlap
    # "clear" and "close" are tied (the difference's interval holds 0) although the means differ
    outcome = pairs.set_index(["method", "other"])["outcome"]
    assert outcome["clear", "close"] == "tie" and outcome["close", "clear"] == "tie"
    assert outcome["clear", "middle"] == "win" and outcome["middle", "clear"] == "loss"
    assert (clear["wins"], clear["ties"], clear["losses"]) == (3, 1, 0)
    assert clear["beats"] == "middle;worse;trivial" and clear["loses_to"] == ""
    # the trivial baseline is a row; "worse" loses to it and is marked
    trivial = _row(board, "trivial")
    assert trivial["value"] == pytest.approx(TRIVIAL_OBJECTIVE) and trivial["rank"] == 4
    assert outcome["worse", "trivial"] == "loss"
    assert not _row(board, "worse")["beats_trivial"] and _row(board, "middle")["beats_trivial"]
    assert pd.isna(trivial["beats_trivial"])
    difference = pairs[(pairs["method"] == "clear") & (pairs["other"] == "middle")].iloc[0]
    assert difference["difference"] == pytest.approx(-0.10)
    assert difference["low"] <= -0.10 <= difference["high"] < 0


def test_higher_is_better_metric_flips_the_order():
    runs = _runs().assign(test_auc=lambda t: 1 - t["dro_objective"],
                          trivial_test_auc=1 - TRIVIAL_OBJECTIVE)
    rows, _ = lb.select(runs, KL, "test_auc")
    board, pairs = lb.leaderboard(rows, KL, "test_auc")
    assert _row(board, "clear")["rank"] == 1 and _row(board, "clear")["value"] == pytest.approx(0.9)
    assert _row(board, "clear")["low"] < 0.9 < _row(board, "clear")["high"]
    assert not _row(board, "worse")["beats_trivial"]
    p = pairs[(pairs["method"] == "clear") & (pairs["other"] == "middle")].iloc[0]
    assert p["difference"] == pytest.approx(0.10) and 0 < p["low"] <= 0.10 <= p["high"]


def test_student_t_interval_of_a_single_configuration():
    board, _ = _board(_runs(), interval="t")
    values = np.array(OBJECTIVE["close"])
    half = stats.t.ppf(0.975, 4) * values.std(ddof=1) / np.sqrt(5)
    close = _row(board, "close")
    assert (close["low"], close["high"]) == pytest.approx((values.mean() - half,
                                                           values.mean() + half))


def test_a_noiseless_control_is_not_a_competitor_at_its_planned_epsilon():
    """RaCO-DP's ``racodp_noise_off`` is planned at each epsilon and spends infinity: left
    out of the private cells (it led them at the quick scale), counted as dropped."""
    runs = pd.concat([_runs().assign(epsilon_spent=1.0),
                      _runs({"a_noise_off": [0.01, 0.01]}).assign(epsilon_spent=np.inf),
                      _runs({"unaccounted": [0.2, 0.2]}).assign(epsilon_spent=np.nan)],
                     ignore_index=True)
    rows, dropped = lb.select(runs, KL, "dro_objective")
    assert set(rows["method"]) == {*OBJECTIVE, "unaccounted"}
    assert dropped["not private at its epsilon"] == 2


def test_one_run_gives_no_interval_and_no_decision():
    board, pairs = _board(_runs({"a": [0.1], "b": [0.3]}))
    assert np.isnan(_row(board, "a")["low"]) and _row(board, "a")["undecided"] == 2
    assert _row(board, "a")["beats_trivial"] is False  # not shown better than the trivial
    assert set(pairs["outcome"]) == {"n/a"}


def test_refuses_to_mix_deltas_splits_and_accountants():
    mixed = pd.concat([_runs(), _runs({"other": [0.1, 0.1]}, delta=1e-6)], ignore_index=True)
    with pytest.raises(ValueError, match=r"^delta: the runs of dataset=mnist-st, epsilon=1.0 "
                                         r"have 2 values"):
        _board(mixed)
    board, _ = lb.leaderboard(*[lb.select(mixed, KL, "dro_objective", delta=1e-5)[0]],
                              KL, "dro_objective")
    assert "other" not in set(board["method"])
    with pytest.raises(ValueError, match="^split: "):
        _board(_runs().assign(split=lambda t: np.where(t["seed"] == 0, "s1", "s2")))
    with pytest.raises(ValueError, match="^accountant: "):
        _board(_runs().assign(accountant=lambda t: np.where(t["seed"] == 0, "rdp", "pld")))
    # a non-private run has no delta to agree on; another epsilon is another cell
    board, _ = _board(pd.concat([_runs(), _runs({"np": [0.05, 0.06]}, delta=0.1,
                                                epsilon=np.inf)], ignore_index=True))
    assert set(board.loc[np.isinf(board["epsilon"]), "method"]) == {"np", "trivial"}


def test_fair_classification_reads_the_pareto_front_within_each_budget():
    """"e": two values of its knob gamma (one tuning configuration, one front); "g": the
    same two points as two tuned learning rates (two configurations); "f": one point."""
    family = lb.FAMILIES["fair_classification"]
    points = {("e", "p_gamma", 0.1): (0.15, 0.02), ("e", "p_gamma", 0.2): (0.12, 0.08),
              ("g", "p_lr", 0.1): (0.15, 0.02), ("g", "p_lr", 0.2): (0.12, 0.08),
              ("f", "p_gamma", np.nan): (0.14, 0.04)}
    runs = pd.DataFrame([
        {"paper": "racodp", "experiment": "x", "dataset": "adult", "method": method,
         "epsilon": 1.0, "delta": 1e-5, "accountant": "rdp", "split": "s", "seed": seed,
         parameter: value, "test_error": error + noise, "dp_violation": violation,
         "trivial_test_error": 0.25, "trivial_dp_violation": 0.0}
        for (method, parameter, value), (error, violation) in points.items()
        for seed, noise in enumerate([-0.002, 0.0, 0.002])])
    rows, _ = lb.select(runs, family, "test_error")
    # a tuning budget of 2: "e" and "g" scored on their whole front, "f" on its one point
    board, _ = lb.leaderboard(rows, family, "test_error", tuning_budget=2)
    at = board.set_index(["budget", "method"])["value"]
    for method in ("e", "g"):
        assert at[0.05, method] == pytest.approx(0.135)  # between (0.02, 0.15), (0.08, 0.12)
        assert at[0.1, method] == pytest.approx(0.12) and np.isnan(at[0.01, method])
    assert at[0.05, "f"] == pytest.approx(0.14) and at[0.01, "trivial"] == pytest.approx(0.25)
    assert pd.isna(board.set_index(["budget", "method"]).loc[(0.01, "e"), "beats_trivial"])
    at_05 = board[board["budget"] == 0.05]
    assert (_row(at_05, "g")["configs"], _row(at_05, "g")["below_tuning_budget"]) == (2, False)
    assert (_row(at_05, "e")["configs"], _row(at_05, "e")["below_tuning_budget"]) == (1, True)
    # the default budget, one configuration: "e" still reads its whole front; "g" draws one
    # of its two, and the one beyond 0.05 deploys the trivial baseline instead
    board, _ = lb.leaderboard(rows, family, "test_error")
    at = board.set_index(["budget", "method"])["value"]
    assert set(board["tuning_budget"]) == {1}
    assert at[0.05, "e"] == pytest.approx(0.135)
    assert at[0.05, "g"] == pytest.approx((0.15 + 0.25) / 2)
    assert at[0.1, "g"] == pytest.approx((0.15 + 0.12) / 2) and np.isnan(at[0.01, "g"])


def _write(path, runs: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True)
    runs.drop(columns="split").to_parquet(path)


def test_compare_cli_end_to_end(tmp_path, capsys):
    table = tmp_path / "results" / "dpdro" / "runs.parquet"
    _write(table, _runs())
    out = tmp_path / "compare"
    assert main(["compare", str(table), "--family", "kl_dro", "--metric", "dro_objective",
                 "--out", str(out), "--draws", "400"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["cells"] == 1 and printed["clear_wins"] == {} and printed["runs"] == 20
    board = pd.read_csv(out / "leaderboard.csv")
    assert board.loc[board["method"] == "clear", "rank"].item() == 1
    assert not board.loc[board["method"] == "worse", "beats_trivial"].item()
    summary = (out / "summary.md").read_text()
    assert "| dataset=mnist-st, epsilon=1 | - | clear | 0.1 [" in summary
    assert "| tied: clear, close | close: 0.002 [" in summary and "| worse | - |" in summary


def test_compare_cli_refuses_tables_of_different_splits(tmp_path, capsys):
    tables = []
    for paper, digest in (("a", "aaaa"), ("b", "bbbb")):
        root = tmp_path / paper / "results"
        (root / "data" / "mnist-st").mkdir(parents=True)
        (root / "data" / "mnist-st" / "meta.json").write_text(json.dumps(
            {"arrays_sha256": digest}))
        _write(root / "dpdro" / "runs.parquet", _runs())
        tables.append(str(root / "dpdro" / "runs.parquet"))
    with pytest.raises(SystemExit) as exit_:
        main(["compare", *tables, "--family", "kl_dro", "--metric", "dro_objective",
              "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert "dpminimax compare: error: split: the runs of dataset=mnist-st, epsilon=1.0 have " \
           "2 values (aaaa, bbbb)" in capsys.readouterr().err


def test_verdicts_name_the_clear_winner_its_margin_and_the_unreached():
    objective = {k: v for k, v in OBJECTIVE.items() if k != "close"}
    board, pairs = _board(_runs(objective))
    (verdict,) = lb.verdicts(board, pairs, KL, "dro_objective").to_dict("records")
    assert verdict["leader"] == "clear" and verdict["verdict"] == lb.CLEAR_WIN
    assert verdict["next"] == "middle" and verdict["ahead_by"] == pytest.approx(0.10)
    assert 0 < verdict["ahead_low"] <= 0.10 <= verdict["ahead_high"]
    assert verdict["not_shown_better_than_trivial"] == "worse"
    board, pairs = _board(_runs())
    (verdict,) = lb.verdicts(board, pairs, KL, "dro_objective").to_dict("records")
    assert verdict["verdict"] == "tied: clear, close" and verdict["next"] == "close"
    # a method that cannot reach a violation budget is listed, not ranked
    family = lb.FAMILIES["fair_classification"]
    runs = _runs(objective).assign(paper="racodp", test_error=lambda t: t["dro_objective"],
                                   trivial_test_error=TRIVIAL_OBJECTIVE, trivial_dp_violation=0.0,
                                   dp_violation=lambda t: np.where(t["method"] == "clear", 0.3,
                                                                   0.01))
    board, pairs = lb.leaderboard(lb.select(runs, family, "test_error")[0], family,
                                  "test_error")
    at = lb.verdicts(board, pairs, family, "test_error").set_index("budget")
    assert at.loc[0.1, "leader"] == "middle" and at.loc[0.1, "not_reaching_budget"] == "clear"
    assert at.loc[0.1, "verdict"] == lb.CLEAR_WIN  # "clear" is out of reach, not undecided


def test_a_score_undefined_on_the_seed_means_has_no_interval():
    # out of the budget's reach on the means, within it on most resamples: still no interval
    draws = np.array([np.nan, 0.2, 0.3, np.nan, 0.25])
    assert all(np.isnan(lb._bootstrap_interval(draws)))
    assert all(np.isnan(lb._rank_interval(np.array([np.nan, 1.0, 1.0, 2.0]))))
    assert lb._bootstrap_interval(np.array([0.2, 0.1, 0.3])) == pytest.approx((0.105, 0.295))


def test_the_cli_offers_every_family():
    from dpminimax.cli import build_parser

    for name in lb.FAMILIES:
        args = build_parser().parse_args(["compare", "runs.parquet", "--family", name,
                                          "--out", "out"])
        assert args.family == name and args.interval == "bootstrap"


def test_an_override_folder_reads_the_split_from_the_shared_prepared_data(tmp_path):
    """results/override~<d>/<paper>/runs.parquet: the split is results/data/<d>/meta.json's."""
    meta = tmp_path / "results" / "data" / "mnist-st" / "meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"arrays_sha256": "abcdef0123456789ffff"}))
    table = tmp_path / "results" / "override~mnist-st" / "dpdro" / "runs.parquet"
    _write(table, _runs())
    assert set(lb.load_runs([table])["split"]) == {"abcdef0123456789"}


def test_compare_writes_the_utility_figure_and_refuses_a_constrained_one_without_budget(
        tmp_path):
    table = tmp_path / "results" / "dpdro" / "runs.parquet"
    _write(table, pd.concat([_runs(epsilon=1.0), _runs(epsilon=4.0)]))
    done = lb.compare([table], "kl_dro", tmp_path / "out", metric="dro_objective", draws=200,
                      figure=True)
    assert done["cells"] == 2 and done["papers"] == ["dpdro"]
    for name in ("leaderboard.csv", "summary.md", "utility_vs_eps.pdf", "utility_vs_eps.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    fair = _runs().assign(paper="racodp", test_error=lambda t: t["dro_objective"],
                          dp_violation=0.01)
    _write(tmp_path / "fair" / "racodp" / "runs.parquet", fair)
    with pytest.raises(ValueError, match="^figure_budget: fair_classification is constrained"):
        lb.compare([tmp_path / "fair" / "racodp" / "runs.parquet"], "fair_classification",
                   tmp_path / "fair_out", figure=True)


def test_compare_says_not_run_when_every_run_is_on_stand_in_data(tmp_path):
    """The workflow's rule must complete (and say why) when nothing is left to compare."""
    table = tmp_path / "results" / "dpdro" / "runs.parquet"
    _write(table, _runs().assign(data_standin=True))
    done = lb.compare([table], "kl_dro", tmp_path / "out", metric="dro_objective", figure=True)
    assert done["runs"] == 0 and done["dropped"]["stand-in data"] == 20
    assert (tmp_path / "out" / "summary.md").read_text().endswith(
        "NOT RUN: no run of kl_dro with `dro_objective` is left to compare (runs left out - "
        "stand-in data: 20).\n")
    assert pd.read_csv(tmp_path / "out" / "leaderboard.csv").empty
    assert (tmp_path / "out" / "utility_vs_eps.png").stat().st_size > 0


# --- the same tuning budget for every method (issue 39 item 2) -------------------------------

#: Configuration scores with ties, and (error, violation) points with ties in both.
SCORES = np.array([0.3, 0.1, 0.2, 0.1, 0.5, 0.25])
POINTS = np.array([(0.20, 0.01), (0.15, 0.04), (0.12, 0.08), (0.15, 0.03), (0.10, 0.12),
                   (0.18, 0.00), (0.12, 0.08)])


@pytest.mark.parametrize("k", range(1, len(SCORES) + 1))
def test_expected_best_of_k_is_the_average_over_every_k_subset(k):
    brute = np.mean([SCORES[list(s)].min() for s in itertools.combinations(range(6), k)])
    assert lb.expected_best(SCORES[None], k)[0] == pytest.approx(brute)


BUDGETS = np.array([0.0, 0.02, 0.03, 0.05, 0.1, 0.2])


def _within(error, violation, unit, k, fallback=0.25):
    """:func:`expected_front_within` on one draw (the seed means) at :data:`BUDGETS`."""
    return lb.expected_front_within(error[None], violation[None], np.asarray(unit), BUDGETS,
                                    k, np.full((1, len(BUDGETS)), fallback))[0]


@pytest.mark.parametrize("k", range(1, len(POINTS) + 1))
def test_expected_front_within_a_budget_is_the_average_over_every_k_subset(k):
    """Each point its own configuration: each k-subset scored as the whole grid was (its
    Pareto front read at the budget), the trivial baseline's 0.25 where it reaches nothing."""
    error, violation = POINTS.T
    brute = []
    for subset in map(list, itertools.combinations(range(len(POINTS)), k)):
        value = error_at(pareto_front(error[subset], violation[subset]), BUDGETS)
        brute.append(np.where(np.isnan(value), 0.25, value))
    got = _within(error, violation, range(len(POINTS)), k)
    assert got == pytest.approx(np.mean(brute, axis=0))


def test_one_configuration_is_the_mean_and_all_of_them_the_best():
    assert lb.expected_best(SCORES[None], 1)[0] == pytest.approx(SCORES.mean())
    assert lb.expected_best(SCORES[None], len(SCORES))[0] == pytest.approx(SCORES.min())
    error, violation = POINTS.T
    each = range(len(POINTS))
    whole = error_at(pareto_front(error, violation), BUDGETS)
    assert _within(error, violation, each, len(POINTS)) == pytest.approx(whole, nan_ok=True)
    beyond = violation[:, None] > BUDGETS[None]  # k = 1: the trivial one where beyond
    mean = np.where(beyond, 0.25, error[:, None]).mean(axis=0)
    reached = ~np.isnan(whole)
    assert _within(error, violation, each, 1)[reached] == pytest.approx(mean[reached])
    # no configuration within the budget: no score, whatever the fallback
    assert np.isnan(_within(error, violation + 1.0, each, 3)).all()
    # no fallback (no trivial columns) and a draw that may reach nothing: no score
    assert np.isnan(_within(error, violation, each, 2, fallback=math.nan)[1])


def test_a_knob_grid_is_one_tuning_configuration_read_off_its_front():
    """A method with six knob values (RaCO-DP's gamma) is one tuning configuration: at k = 1
    it scores its whole front at the budget, not the mean over its knob points. Two such
    grids (a second, separately tuned value of another parameter) are two configurations: at
    k = 1 the mean of their fronts' readings."""
    error, violation = POINTS.T
    one = np.zeros(len(POINTS), int)
    whole = error_at(pareto_front(error, violation), BUDGETS)
    assert _within(error, violation, one, 1) == pytest.approx(whole, nan_ok=True)
    halves = (np.arange(len(POINTS)) >= 4).astype(int)
    front = [error_at(pareto_front(error[halves == h], violation[halves == h]), BUDGETS)
             for h in (0, 1)]
    expect = np.mean([np.where(np.isnan(f), 0.25, f) for f in front], axis=0)
    assert _within(error, violation, halves, 1)[~np.isnan(whole)] == pytest.approx(
        expect[~np.isnan(whole)])


def test_tuning_units_drop_the_knob_and_what_it_determines():
    """Tran 2021a's penalty gamma 0 drops its histogram release, so its noise multipliers
    change with gamma: one tuning configuration. A learning rate crossed with gamma is tuned:
    two configurations. A family without knobs: every configuration counts."""
    runs = pd.DataFrame([
        {"paper": "dpfermi", "experiment": "e", "method": "tran2021a", "p_gamma": g,
         "p_noise_multiplier": 3.9 if g == 0 else 4.2, "p_lr": lr, "seed": seed}
        for g in (0.0, 1.0, 5.0) for lr in (0.1, 0.2) for seed in (0, 1)])
    assert lb.tuning_units(runs, ("p_gamma", "p_lam")).nunique() == 2
    assert lb.tuning_units(runs[runs["p_lr"] == 0.1], ("p_gamma",)).nunique() == 1
    assert lb.tuning_units(runs, ()).nunique() == 6


def test_eleven_configurations_no_longer_win_by_selection_over_one_equal():
    """"grid": 11 configurations whose scores spread around 0.2 (each tight over seeds);
    "single": one configuration at their mean. Picking the best of 11 makes "grid" win;
    the expected best of 1 (the cell's smallest count) ties them."""
    noise = [-0.001, 0.0, 0.001]
    grid = [{"method": "grid", "p_lr": lr, "dro_objective": 0.2 + shift + e, "seed": seed}
            for lr, shift in enumerate(np.linspace(-0.02, 0.02, 11))
            for seed, e in enumerate(noise)]
    single = [{"method": "single", "p_lr": 0, "dro_objective": 0.2 + e, "seed": seed}
              for seed, e in enumerate(noise)]
    runs = pd.DataFrame(grid + single).assign(
        paper="dpdro", experiment="table3", dataset="mnist-st", epsilon=1.0, delta=1e-5,
        accountant="rdp", split="s1", trivial_dro_objective=TRIVIAL_OBJECTIVE)
    board, pairs = _board(runs)
    outcome = pairs.set_index(["method", "other"])["outcome"]
    assert outcome["grid", "single"] == "tie"
    assert _row(board, "grid")["value"] == pytest.approx(0.2)
    assert (_row(board, "grid")["configs"], _row(board, "grid")["tuning_budget"]) == (11, 1)
    # what selection alone gave: the best of 11 wins
    board, pairs = _board(runs, tuning_budget=11)
    assert pairs.set_index(["method", "other"])["outcome"]["grid", "single"] == "win"
    assert _row(board, "grid")["value"] == pytest.approx(0.18)
    assert _row(board, "single")["below_tuning_budget"]
    assert not _row(board, "grid")["below_tuning_budget"]


def test_the_cli_and_the_workflow_script_write_the_tuning_budget(tmp_path, capsys):
    table = tmp_path / "results" / "dpdro" / "runs.parquet"
    two = _runs().assign(p_lr=0.2, dro_objective=lambda t: t["dro_objective"] + 0.05)
    _write(table, pd.concat([_runs(), two[two["method"] != "clear"]], ignore_index=True))
    assert main(["compare", str(table), "--family", "kl_dro", "--metric", "dro_objective",
                 "--out", str(tmp_path / "cli"), "--draws", "200"]) == 0
    board = pd.read_csv(tmp_path / "cli" / "leaderboard.csv")
    assert set(board["tuning_budget"]) == {1}  # "clear" has one configuration, the others 2
    assert board.set_index("method").loc["close", "value"] == pytest.approx(0.102 + 0.025)
    assert main(["compare", str(table), "--family", "kl_dro", "--metric", "dro_objective",
                 "--out", str(tmp_path / "cli2"), "--draws", "200",
                 "--tuning-budget", "2"]) == 0
    board = pd.read_csv(tmp_path / "cli2" / "leaderboard.csv").set_index("method")
    assert set(board["tuning_budget"]) == {2} and board.loc["clear", "below_tuning_budget"]
    assert board.loc["close", "value"] == pytest.approx(0.102)
    assert "| k |" in (tmp_path / "cli2" / "summary.md").read_text()
    # the workflow's rule: its family settings (the config's compare: block) carry the budget
    out = tmp_path / "wf"
    smk = SimpleNamespace(
        params=SimpleNamespace(settings={"draws": 200, "experiments": ["table3"],
                                         "metric": "dro_objective", "tuning_budget": 2}),
        input=SimpleNamespace(runs=[str(table)]), log=[str(tmp_path / "wf.log")],
        output=SimpleNamespace(leaderboard=str(out / "leaderboard.csv"),
                               pdf=str(out / "u.pdf"), png=str(out / "u.png")),
        wildcards=SimpleNamespace(family="kl_dro"), rule="compare", threads=1)
    runpy.run_path(str(ROOT / "workflow" / "scripts" / "compare.py"),
                   init_globals={"snakemake": smk})
    assert set(pd.read_csv(out / "leaderboard.csv")["tuning_budget"]) == {2}


def test_the_hyperparameter_tuning_family_ranks_the_bilevel_tuners_against_x0():
    """The bilevel paper's tuners and Papernot & Steinke's on two tuning problems of one n and
    two d_x: the cells are (dataset, n, d_x, epsilon); the start x0 is the trivial row; runs
    without the excess test loss (another experiment's) are left out. The ridge cell ranks
    at least four methods from at least two papers (issue #39)."""
    family = lb.FAMILIES["hyperparameter_tuning"]
    assert (family.papers, family.metric) == (("bilevel",), "excess_test_loss")
    excess = {"dp_bilevel": [0.0020, 0.0024, 0.0022], "dp_grid": [0.0012, 0.0010, 0.0011],
              "fixed_omega": [0.0, 0.0001, 0.0], "dp_aid": [0.0030, 0.0032, 0.0031],
              "ps_tuning": [0.0017, 0.0019, 0.0018]}
    rows = [{"experiment": "e6_tuning", "dataset": "pc_ridge_tuning", "p_d_x": 1.0,
             "method": method, "seed": seed, "excess_test_loss": value}
            for method in ("dp_bilevel", "dp_grid", "fixed_omega", "ps_tuning")
            for seed, value in enumerate(excess[method])]
    rows += [{"experiment": "e8_multi", "dataset": "pb_group_ridge", "p_d_x": d_x,
              "method": method, "seed": seed, "excess_test_loss": value + 0.001 * (d_x == 8)}
             for d_x in (2.0, 8.0) for method in ("dp_bilevel", "dp_aid")
             for seed, value in enumerate(excess[method])]
    rows += [{"experiment": "e3_rates", "dataset": "pa_linear_response", "p_d_x": 4.0,
              "method": "dp_bilevel", "seed": 0, "excess_test_loss": np.nan}]
    runs = pd.DataFrame(rows).assign(
        paper="bilevel", p_n=1000, epsilon=1.0, delta=1e-5, accountant="rdp", split="s",
        trivial_excess_test_loss=0.0015, trivial_output="x0 = 0", data_standin=False)
    selected, dropped = lb.select(runs, family, family.metric)
    assert dropped["metric missing"] == 1
    board, _ = lb.leaderboard(selected, family, family.metric, draws=400)
    cells = board.groupby(["dataset", "p_n", "p_d_x", "epsilon"]).ngroups
    assert cells == 3
    ridge = board[board["dataset"] == "pc_ridge_tuning"].set_index("method")
    assert list(ridge.sort_values("rank").index) == ["fixed_omega", "dp_grid", "trivial",
                                                     "ps_tuning", "dp_bilevel"]
    tuners = set(ridge.index) - {"trivial"}
    assert len(tuners) >= 4 and len({get_method(m).source for m in tuners}) >= 2
    assert ridge.loc["dp_grid", "value"] == pytest.approx(0.0011)
    assert ridge.loc["trivial", "value"] == pytest.approx(0.0015)
    assert ridge.loc["dp_grid", "beats_trivial"] and not ridge.loc["dp_bilevel", "beats_trivial"]
    multi = board[(board["dataset"] == "pb_group_ridge") & (board["p_d_x"] == 8.0)]
    assert multi.set_index("method").loc["dp_aid", "value"] == pytest.approx(0.0041)
