"""The pilot that tunes the theory schedule's multipliers (A2, A22): its table
(median and 90th percentile over seeds per (c_lam, c_T), the argmin of the median) on a pinned
frame, the freeze claim's verdict both ways, and the experiment's configuration (its seeds, hence
its samples, disjoint from every evaluation run's; the frozen defaults on its grid)."""

from __future__ import annotations

import math
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest
import torch

from dpminimax.algorithms.bilevel.dp_bilevel import C_LAM, C_T, DpBilevel
from dpminimax.api.reporting import make_claims_table, make_figure
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.problems import get_bilevel_problem
from dpminimax.report.bilevel.pilot import (
    measured_freezes,
    multiplier_gap,
    pilot_choice,
    pilot_table,
)
from dpminimax.report.claims.claim_rules import FAILS, HOLDS, NOT_RUN
from dpminimax.report.claims.claims import claims_table
from dpminimax.report.claims.reference import load_claims
from dpminimax.report.registry import FIGURES, TABLES, FigureRequest
from dpminimax.seeding import make_generator

PAPER = Path(__file__).parents[3] / "papers" / "bilevel"
SCALES = ("smoke", "default", "quick", "paper")
FREEZE = "schedule_multipliers_frozen"
#: (c_lam, c_T) -> ||G|| of seeds 0, 1, 2 and the cell's scheduled lambda, T.
CELLS = {(0.5, 0.1): ([0.30, 0.10, 0.20], 4.0, 3), (0.5, 0.4): ([0.25, 0.15, 0.90], 4.0, 10),
         (2.0, 0.1): ([0.40, 0.50, 0.60], 8.0, 3), (2.0, 0.4): ([0.05, 0.80, 0.70], 8.0, 10)}


def _runs(cells=CELLS, experiment="e3_pilot", **extra) -> pd.DataFrame:
    return pd.DataFrame([
        {"experiment": experiment, "dataset": "pa_linear_response", "method": "dp_bilevel",
         "epsilon": 1.0, "seed": seed, "p_n": 10000, "p_schedule": "theory", "p_c_lam": c_lam,
         "p_c_T": c_t, "p_lam": lam, "p_lam_raised": lam == 4.0, "p_outer_steps": steps,
         "gradient_mapping_norm": value, "d_x": 4, "d_y": 16, "p_problem": "pa_linear_response",
         "p_instance": 0, "delta": 1e-5, "p_gamma": 0.05, **extra}
        for (c_lam, c_t), (values, lam, steps) in cells.items()
        for seed, value in enumerate(values)])


def _evaluation(c_lam: float, c_t: float, experiment: str = "e3_theory") -> pd.DataFrame:
    return _runs({(c_lam, c_t): ([0.5, 0.5], 10.0, 100)}, experiment=experiment)


def test_the_pilot_table_gives_median_p90_schedule_and_argmin():
    """Medians 0.20, 0.25, 0.50, 0.70; the 90th percentile interpolates linearly (0.25 + 0.8
    (0.90 - 0.25) = 0.77); the argmin of the median is (0.5, 0.1), although (2.0, 0.4) holds the
    single smallest run."""
    table = TABLES["pilot_multipliers"](_runs())
    assert list(zip(table["c_lam"], table["c_T"], strict=True)) == list(CELLS)
    assert table["median"].tolist() == pytest.approx([0.20, 0.25, 0.50, 0.70])
    assert table["p90"].tolist() == pytest.approx([0.28, 0.77, 0.58, 0.78])
    assert table["seeds"].tolist() == [3, 3, 3, 3]
    assert table["lam"].tolist() == [4.0, 4.0, 8.0, 8.0]
    assert table["outer_steps"].tolist() == [3, 10, 3, 10]
    assert table["lam_raised"].tolist() == [True, True, False, False]
    assert table["argmin"].tolist() == [True, False, False, False]
    assert pilot_choice(_runs()) == (0.5, 0.1)


def test_the_argmin_is_taken_per_setting_and_the_choice_needs_one():
    other = _runs({key: ([1.0 - v for v in values], lam, steps)
                   for key, (values, lam, steps) in CELLS.items()}).assign(p_n=20000)
    both = pd.concat([_runs(), other], ignore_index=True)
    table = pilot_table(both)
    chosen = table.loc[table["argmin"], ["p_n", "c_lam", "c_T"]].to_records(index=False)
    assert [tuple(row) for row in chosen] == [(10000, 0.5, 0.1), (20000, 2.0, 0.4)]
    with pytest.raises(ValueError, match="2 settings"):
        pilot_choice(both)


def test_the_pilot_figure_boxes_the_argmin(tmp_path):
    """One panel, the median in every cell (c_lam rows, c_T columns), lambda and T on the
    axes, one box: at (row 0, column 0), the cell (0.5, 0.1)."""
    fig = FIGURES["pilot_multipliers"](_runs(), FigureRequest(out_paths=[tmp_path / "p.png"]))
    (ax,) = [ax for ax in fig.axes if ax.get_title()]
    assert sorted(t.get_text() for t in ax.texts) == ["0.2", "0.25", "0.5", "0.7"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.1\nT=3", "0.4\nT=10"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0.5 (λ=4)", "2 (λ=8)"]
    (box,) = ax.patches
    assert box.get_xy() == pytest.approx((-0.45, -0.45))
    assert (tmp_path / "p.png").stat().st_size > 0


def test_the_workflows_pilot_figure_says_it_shows_medians(tmp_path):
    """make_figure stamps every figure with its seed note: the pilot's says median, not mean."""
    _runs().to_parquet(tmp_path / "runs.parquet")
    out = tmp_path / "p.png"
    with mock.patch("dpminimax.report.figures.save_figure") as saved:
        make_figure(tmp_path / "runs.parquet", "pilot_multipliers", [out])
    fig = saved.call_args.args[0]
    notes = [t.get_text() for t in fig.texts]
    assert notes == ["median over 3 seed(s) per cell; the argmin boxed"]


def test_the_multiplier_gap_is_zero_only_at_the_pilots_choice():
    pilot = _runs()
    assert multiplier_gap(pd.concat([pilot, _evaluation(0.5, 0.1)]), "e3_pilot",
                          ["e3_theory"]) == 0.0
    doubled = pd.concat([pilot, _evaluation(0.5, 0.1), _evaluation(0.5, 0.2, "e3_dx")])
    assert multiplier_gap(doubled, "e3_pilot", ["e3_theory", "e3_dx"]) == pytest.approx(
        math.log10(2))
    assert multiplier_gap(doubled, "e3_pilot", ["e3_theory"]) == 0.0
    fixed = _evaluation(2.0, 0.4).assign(p_schedule="fixed")  # c_lam, c_T unused there
    assert multiplier_gap(pd.concat([pilot, _evaluation(0.5, 0.1), fixed]), "e3_pilot",
                          ["e3_theory"]) == 0.0
    assert math.isnan(multiplier_gap(pilot, "e3_pilot", ["e3_theory"]))
    assert math.isnan(multiplier_gap(_evaluation(0.5, 0.1), "e3_pilot", ["e3_theory"]))


@pytest.mark.parametrize(("evaluated", "verdict"), [
    ((0.5, 0.1), HOLDS), ((2.0, 0.1), FAILS), ((0.5, 0.4), FAILS)])
def test_the_freeze_claim_says_whether_the_evaluation_ran_the_pilots_choice(evaluated,
                                                                               verdict):
    (claim,) = [c for c in load_claims(PAPER / "claims.yaml") if c["id"] == FREEZE]
    runs = pd.concat([_runs(), _evaluation(*evaluated, experiment="e3_dy")], ignore_index=True)
    (row,) = claims_table([claim], runs, measured=measured_freezes(runs, [claim])).to_dict(
        orient="records")
    assert row["verdict"] == verdict
    assert row["measured_value"] == pytest.approx(0.0 if verdict == HOLDS
                                                  else math.log10(4))


def test_the_workflows_claims_table_measures_the_freeze(tmp_path):
    """The claims rule's entry point computes the gap from the runs (no measured file)."""
    runs = pd.concat([_runs(), _evaluation(0.5, 0.1)], ignore_index=True)
    runs.to_parquet(tmp_path / "runs.parquet")
    table = make_claims_table(PAPER / "claims.yaml", tmp_path / "runs.parquet",
                              tmp_path / "claims.csv", tmp_path / "claims.md")
    (row,) = table.loc[table["id"] == FREEZE].to_dict(orient="records")
    assert (row["verdict"], row["measured_value"], row["source"]) == (HOLDS, 0.0, "measured")


def test_the_freeze_claim_is_not_run_without_the_evaluation_runs():
    (claim,) = [c for c in load_claims(PAPER / "claims.yaml") if c["id"] == FREEZE]
    (row,) = claims_table([claim], _runs(), measured=measured_freezes(_runs(), [claim])).to_dict(
        orient="records")
    assert row["verdict"].startswith(NOT_RUN)


def _jobs(scale: str):
    return expand_jobs(load_experiments(PAPER / "experiments.yaml"), scale)


@pytest.mark.parametrize("scale", SCALES)
def test_the_pilot_runs_at_the_specs_point_on_its_own_seeds(scale):
    """n = 10^4, epsilon 1, P-A (4, 16), the theory schedule; no seed of the
    pilot is a seed of another bilevel job or of the leak (whose S+ / S- runs take seeds 0 ...
    2 runs - 1) at the same scale, so no pilot sample is an evaluation sample."""
    jobs = _jobs(scale)
    (pilot,) = [job for job in jobs if job.experiment == "e3_pilot"]
    assert (pilot.dataset, pilot.method, str(pilot.epsilon)) == ("pa_linear_response", "dp_bilevel",
                                                            "1")
    params = pilot.params
    assert (params["n"], params["d_x"], params["d_y"], params["schedule"]) == (
        10000, 4, 16, "theory")
    assert "eta" not in params  # A3's eta, not tuned (experiments.yaml)
    others = {seed for job in jobs if job.experiment != "e3_pilot" for seed in job.seeds}
    leak = load_experiments(PAPER / "experiments.yaml")["leak"]
    runs = max([leak.get("scales", {}).get(scale, {}).get("runs", leak["runs"]),
                *(s.get("runs", 0) for s in leak.get("scales", {}).get(scale, {}).get(
                    "settings", leak["settings"]))])
    assert others and not set(pilot.seeds) & others
    assert min(pilot.seeds) >= 2 * runs
    assert len(pilot.seeds) >= (2 if scale == "smoke" else 20)


@pytest.mark.parametrize("scale", ["default", "quick", "paper"])
def test_the_frozen_defaults_are_on_the_pilots_grid_and_the_evaluation_runs_them(scale):
    jobs = _jobs(scale)
    (pilot,) = [job for job in jobs if job.experiment == "e3_pilot"]
    assert C_LAM in pilot.params["c_lam"] and C_T in pilot.params["c_T"]
    assert DpBilevel.parameters["c_lam"] == C_LAM and DpBilevel.parameters["c_T"] == C_T
    evaluation = [job for job in jobs if job.experiment in ("e3_theory", "e3_dx", "e3_dy")]
    assert {job.experiment for job in evaluation} == {"e3_theory", "e3_dx", "e3_dy"}
    for job in evaluation:
        assert job.params["schedule"] == "theory"
        assert "c_lam" not in job.params and "c_T" not in job.params


def test_a_seed_alone_fixes_a_runs_sample_across_n():
    """Why the pilot needs its own seeds: P-A's sample of run seed s at n = 10^4 is the first
    10^4 rows of its sample at n = 2^14 in the s-coordinates (one generator per seed, "data")."""
    problem = get_bilevel_problem("pa_linear_response", d_x=4, d_y=16)
    small, large = (problem.sample(n, make_generator(7, "data")) for n in (10000, 16384))
    assert torch.equal(small["s"], large["s"][:10000])
    other = problem.sample(10000, make_generator(1000007, "data"))
    assert not torch.equal(small["s"], other["s"])
