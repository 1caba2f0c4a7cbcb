"""Sec. 3's leak (Example 3.1) on P-D: one exact hypergradient (M0), the non-private penalty
method (M1) and the naive outer noise (M2) tell S+ from S- perfectly and give xi_n back to
machine precision; Algorithm 1 (M3) keeps its empirical epsilon below its epsilon, on x_out and
on its inner releases, each epsilon on its own seeds, and the same statistics on an un-noised
release (the positive control) reach AUC 1. The study
runs several (d, n) settings (leak: settings in experiments.yaml), d = 10 and n = 1000 among
them (as E1 plans)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from dpminimax import api
from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.attacks import bilevel_leak
from dpminimax.attacks.bilevel_leak import (
    CONTROL,
    direction,
    distinguish,
    leak_settings,
    leak_table,
    neighbours,
    outputs,
)
from dpminimax.report.bilevel.bilevel_leak import LEAK_CLAIMS, leak_claims
from dpminimax.report.claims.claim_rules import HOLDS
from dpminimax.report.claims.claims import claims_table
from dpminimax.report.claims.reference import load_claims

EPSILONS = (0.5, 4.0)
PARAMS = {"outer_steps": 100, "eta": 0.5, "lam": 10.0}
ROOT = Path(__file__).parents[3]


@pytest.fixture(scope="module")
def rows():
    return {(row["mechanism"], row["epsilon"]): row
            for row in leak_table(d=2, n=100, runs=100, epsilons=EPSILONS, delta=1e-5,
                                  params=PARAMS)}


@pytest.mark.parametrize("mechanism", ["M0", "M1", "M2"])
def test_exact_and_naive_mechanisms_leak_the_last_example(rows, mechanism):
    row = rows[mechanism, math.inf]
    assert row["auc"] == 1.0
    assert row["reconstruction_error"] < 1e-12
    assert row["epsilon_hat"] > 3.0  # as large as 2 x 100 runs can show


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_algorithm_1_keeps_the_empirical_epsilon_below_its_epsilon(rows, epsilon):
    row = rows["M3", epsilon]
    assert row["epsilon_hat"] < epsilon and row["epsilon_hat_inner"] < epsilon
    assert row["auc"] < 0.75 and row["auc_inner"] < 0.75


def test_the_positive_control_sees_the_un_noised_leak_on_both_statistics(rows):
    row = rows[CONTROL, math.inf]
    assert row["auc"] == 1.0 and row["auc_inner"] == 1.0
    assert row["epsilon_hat"] > 3.0 and row["epsilon_hat_inner"] > 3.0


def test_the_inner_release_attack_has_power_where_the_releases_are_nearly_exact():
    """At epsilon 200 (d = 1, n = 100) each inner release's noise is about 0.1 and the 2 T
    releases average it below the 2 / n = 0.02 the neighbours move them by: the attack on
    them is near perfect, while x_out, under C_out-calibrated outer noise, stays near chance."""
    (row,) = [r for r in leak_table(d=1, n=100, runs=60, epsilons=(200.0,), delta=1e-5,
                                    params=PARAMS) if r["mechanism"] == "M3"]
    assert row["auc_inner"] > 0.95
    assert row["auc"] < 0.75


def test_every_case_runs_on_its_own_seeds(monkeypatch):
    """Each mechanism, and each epsilon of M3, draws its noise from a seed block no other case
    reads."""
    seen = []
    real = bilevel_leak.outputs

    def spy(mechanism, sample, seeds, epsilon, delta, params):
        seen.append(set(seeds))
        return real(mechanism, sample, seeds, epsilon, delta, params)

    monkeypatch.setattr(bilevel_leak, "outputs", spy)
    leak_table(d=1, n=50, runs=4, epsilons=(1.0, 2.0), delta=1e-5,
               params={**PARAMS, "outer_steps": 3})
    assert len(seen) == 2 * 6
    assert sum(map(len, seen)) == len(set().union(*seen)) == 2 * 6 * 4


# ------------------------------------------------------------------ settings of a leak: block

BLOCK = {"runs": 30, "epsilons": [1, 4], "delta": 1e-5, "params": PARAMS}


def test_settings_share_the_block_and_override_runs():
    settings = leak_settings({**BLOCK, "settings": [{"d": 2, "n": 100},
                                                    {"d": 10, "n": 1000, "runs": 12}]})
    assert [(s["d"], s["n"], s["runs"]) for s in settings] == [(2, 100, 30), (10, 1000, 12)]
    for setting in settings:
        assert setting["epsilons"] == [1.0, 4.0] and setting["delta"] == 1e-5
        assert setting["params"] == PARAMS and setting["seed"] == 0


def test_one_top_level_d_and_n_is_one_setting():
    (setting,) = leak_settings({**BLOCK, "d": 3, "n": 50, "seed": 7})
    assert (setting["d"], setting["n"], setting["runs"], setting["seed"]) == (3, 50, 30, 7)


@pytest.mark.parametrize("bad", [
    {"settings": [{"d": 2, "n": 100}], "d": 2},                         # both forms
    {"settings": []},                                                   # none
    {"settings": [{"d": 2, "n": 100}, {"d": 2, "n": 100, "runs": 5}]},  # repeated (d, n)
    {"settings": [{"d": 2, "n": 100, "epsilons": [1]}]},                # not a setting's key
    {"settings": [{"d": 2}]},                                           # no n
])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        leak_settings({**BLOCK, **bad})


# ------------------------------------------------------------------ the statistic in any d

def test_the_statistic_projects_on_the_direction_the_neighbours_differ_along():
    """A mean shift along a direction that is not a coordinate (d = 10): the test reads it on
    u, and reading coordinate 0 alone would lose it."""
    gen = torch.Generator().manual_seed(0)
    u = torch.randn(10, generator=gen, dtype=torch.float64)
    u[0] = 0.0
    u /= torch.linalg.vector_norm(u)
    plus = 0.5 * u + torch.randn(400, 10, generator=gen, dtype=torch.float64)
    minus = -0.5 * u + torch.randn(400, 10, generator=gen, dtype=torch.float64)
    along_u = distinguish(plus, minus, 1.0, 1e-5, u)
    along_e1 = distinguish(plus, minus, 1.0, 1e-5)
    assert along_u["auc"] > 0.7 and along_u["epsilon_hat"] > 0.5
    assert abs(along_e1["auc"] - 0.5) < 0.1


def test_the_neighbours_differ_in_the_last_example_along_e1():
    plus, minus = neighbours(10, 50, 0)
    xi_plus, xi_minus = plus.examples["xi"], minus.examples["xi"]
    assert torch.equal(xi_plus[:-1], xi_minus[:-1])
    assert (torch.linalg.vector_norm(xi_plus[:-1], dim=-1) <= 1.0).all()
    assert torch.equal(direction(plus, minus), torch.eye(10, dtype=torch.float64)[0])


def test_chunks_and_repeats_give_what_one_program_gives(monkeypatch):
    """M3 fitted in chunks of runs equals one program run for run (each run its own seed's
    generators); M1, fitted on two seeds and repeated, equals N fitted runs."""
    plus, _ = neighbours(10, 1000, 0)
    whole = outputs("M3", plus, range(6), 2.0, 1e-5, PARAMS)
    monkeypatch.setattr(bilevel_leak, "CHUNK_ELEMENTS", 4 * 1000 * 10)  # 4 runs a chunk
    chunked = outputs("M3", plus, range(6), 2.0, 1e-5, PARAMS)
    assert set(chunked) == {"x", "inner"}
    for key in chunked:
        assert torch.equal(chunked[key], whole[key])
        assert len(whole[key].unique(dim=0)) == 6
    repeated = outputs("M1", plus, range(5), math.inf, 1e-5, PARAMS)["x"]
    monkeypatch.setattr(bilevel_leak, "DETERMINISTIC", ("M0",))
    assert torch.equal(outputs("M1", plus, range(5), math.inf, 1e-5, PARAMS)["x"], repeated)


def test_the_inner_statistic_weighs_each_release_by_its_response_over_its_variance():
    """M3's ``inner`` is sum_t sum_k (r_k / sigma_k^2) y~_{k,t}. One step from x0 = 0 on S+
    and S- with the same seed (the same noise): the releases differ by r_k 2 u / n
    (y* = xi_bar, y^lambda(0) = lambda xi_bar / (1 + lambda)), so the statistic differs along
    u by (2 / n) (1 / sigma_y^2 + (lambda / (1 + lambda))^2 / sigma_l^2) and not across u."""
    n, lam = 40, PARAMS["lam"]
    plus, minus = neighbours(3, n, 0)
    u = direction(plus, minus)
    method = get_method("dp_bilevel")
    runs = [RunSpec(0, 50.0, 1e-5, {"problem": "pd_leak_example", "d_x": 3, "d_y": 3,
                                    **PARAMS, "outer_steps": 1})]
    gap = (bilevel_leak.released(method, plus, runs)["inner"]
           - bilevel_leak.released(method, minus, runs)["inner"])[0]
    _, _, (plan,) = method.plan_runs(plus, runs)
    sigma = {name: plan.release(f"inner_{name}").noise_multiplier
             * plan.release(f"inner_{name}").sensitivity for name in ("y", "y_lambda")}
    expected = 2 / n * (1 / sigma["y"] ** 2 + (lam / (1 + lam)) ** 2 / sigma["y_lambda"] ** 2)
    assert float(gap @ u) == pytest.approx(expected, rel=1e-9)
    torch.testing.assert_close(gap - (gap @ u) * u, torch.zeros(3, dtype=torch.float64),
                               rtol=0, atol=1e-9 * expected)


# ------------------------------------------------------------------ a two-setting study

SETTINGS = {"settings": [{"d": 1, "n": 100}, {"d": 10, "n": 1000, "runs": 40}], "runs": 60,
            "epsilons": [0.5, 4], "delta": 1e-5, "params": PARAMS}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("leak")
    paths = out / "leak.csv", [out / "leak.pdf", out / "leak.png"], out / "claims.json"
    table = api.leak(SETTINGS, *paths)
    return table, paths


def test_every_setting_has_its_rows(study):
    table, (csv, figures, _) = study
    back = pd.read_csv(csv)
    assert {"d", "n", "runs", "mechanism", "epsilon"} <= set(back.columns)
    for (d, n), runs in {(1, 100): 60, (10, 1000): 40}.items():
        rows = back[(back["d"] == d) & (back["n"] == n)]
        assert sorted(rows["mechanism"]) == ["M0", "M1", "M2", "M3", "M3", CONTROL]
        assert set(rows.loc[rows["mechanism"] == "M3", "epsilon"]) == {0.5, 4.0}
        assert (rows["runs"] == runs).all()
    assert len(back) == len(table) == 12
    assert all(path.stat().st_size > 1000 for path in figures)


def test_d10_n1000_reconstructs_to_machine_precision_and_m3_keeps_epsilon(study):
    table = study[0]
    rows = table[(table["d"] == 10) & (table["n"] == 1000)].set_index("mechanism")
    exact = rows.loc[["M0", "M1", "M2"]]
    assert (exact["auc"] == 1.0).all()
    # n x ulp: 1000 examples of norm <= 1 summed in float64
    assert (exact["reconstruction_error"] < 1e-12).all()
    private = rows.loc[["M3"]]
    assert (private["epsilon_hat"] < private["epsilon"]).all()
    assert private["reconstruction_error"].isna().all()


def test_claims_per_setting_reach_the_claims_table(study):
    table, (_, _, claims_json) = study
    claims = json.loads(claims_json.read_text())["claims"]
    assert claims == leak_claims(table)
    assert set(claims) == {f"{stem}_d{d}_n{n}" for stem in LEAK_CLAIMS
                           for d, n in ((1, 100), (10, 1000))}
    checked = claims_table(load_claims(ROOT / "papers" / "bilevel" / "claims.yaml"), None,
                           measured=claims).set_index("id")
    for claim in claims:
        assert checked.loc[claim, "verdict"] == HOLDS, claim  # consistency: certain by design
    assert "d = 10, n = 1000" in checked.loc["leak_exact_auc_d10_n1000", "quantity"]
