"""The E9 accuracy-condition audit table: calls, misses, the exact interval of
the miss rate and the rate the proofs allow."""

from __future__ import annotations

import pandas as pd
import pytest

from dpminimax.report.aggregate import ResultsTableError
from dpminimax.report.minimax.accuracy_audit import accuracy_audit_table


def _runs(dataset: str, missed: list[int], calls: int, game: bool) -> pd.DataFrame:
    return pd.DataFrame({
        "dataset": dataset, "method": "output_perturbation", "p_solver": "extragradient",
        "epsilon": 0.5, "p_n": 256, "delta": 1e-6, "accuracy_violations": missed,
        "solver_calls": calls, "seed": range(len(missed)),
        "allowed_miss_rate": 1e-6 / 8 if game else 1e-6 / 4})


def test_the_audit_sums_calls_and_flags_a_refuted_design():
    table = pd.concat([_runs("p1_least_squares", [0] * 10, 5, game=False),
                       _runs("g1_quadratic_game", [3] * 10, 5, game=True)], ignore_index=True)
    audit = accuracy_audit_table(table).set_index("dataset")
    clean, broken = audit.loc["p1_least_squares"], audit.loc["g1_quadratic_game"]
    assert (clean["solver_calls"], clean["accuracy_violations"]) == (50, 0)
    assert clean["designed_rate"] == pytest.approx(1e-6 / 4)
    assert clean["rate_ci_low"] == 0 and clean["consistent"]
    assert clean["rate_ci_high"] == pytest.approx(1 - 0.025 ** (1 / 50), rel=1e-9)
    assert broken["designed_rate"] == pytest.approx(1e-6 / 8)
    assert broken["violation_rate"] == pytest.approx(0.6)
    assert not broken["consistent"]


def test_a_table_without_markov_runs_is_refused():
    table = _runs("p1_least_squares", [0], 1, game=False).drop(columns="solver_calls")
    with pytest.raises(ResultsTableError, match="stopping: markov"):
        accuracy_audit_table(table)
    empty = _runs("p1_least_squares", [0], 1, game=False).assign(solver_calls=float("nan"))
    with pytest.raises(ResultsTableError, match="no run"):
        accuracy_audit_table(empty)
