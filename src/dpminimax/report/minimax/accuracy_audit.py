"""The accuracy-condition audit of BYOA (our experiment E9): how often a base solver stopped by
Markov's inequality on its a-priori rate (no certificate) returned a point that misses the
accuracy condition of Algs. 1-5, beside the failure probability the paper's proofs allow it
(delta / 4 on a minimization problem, delta / 8 on a game, per call).

One row per (problem, method, base solver, epsilon, n): the solver calls over the seeds, the
calls that missed, the observed rate with its exact (Clopper-Pearson) 95% interval and the
designed rate (the runs' ``allowed_miss_rate``, which the solvers record); ``consistent`` is
false where the interval's lower end is above the designed rate (the observed failures refute
the design). With few calls and no failure the interval's upper end stays far above
delta / 4: the audit can refute the design, not confirm it.

:func:`markov_ratio_table` is the audit on a randomized solver (issue 36): the distribution
over the runs of ||A(S) - x*||_w / r (each run's largest over its calls) at the planned stop
and at the iterations where the same Markov route bounds the miss probability by each audit
level (:data:`~dpminimax.solvers.AUDIT_LEVELS`), against that bound.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from dpminimax.report.aggregate import ResultsTableError, require_columns

KEYS = ("dataset", "method", "p_solver", "epsilon", "p_n")
COLUMNS = ("accuracy_violations", "solver_calls", "allowed_miss_rate")


def accuracy_audit_table(table: pd.DataFrame) -> pd.DataFrame:
    """Solver calls and accuracy violations per grid point, against the designed rate."""
    require_columns(table, (*KEYS, *COLUMNS), "the accuracy audit",
                    "run the methods with stopping: markov")
    audited = _audited(table)
    rows = []
    for key, runs in audited.groupby(list(KEYS)):
        calls = int(runs["solver_calls"].sum())
        missed = int(runs["accuracy_violations"].sum())
        low, high = binomtest(missed, calls).proportion_ci(0.95, method="exact")
        designed = float(runs["allowed_miss_rate"].min())
        rows.append({**dict(zip(KEYS, key, strict=True)), "seeds": len(runs),
                     "solver_calls": calls, "accuracy_violations": missed,
                     "violation_rate": missed / calls, "rate_ci_low": float(low),
                     "rate_ci_high": float(high), "designed_rate": designed,
                     "consistent": bool(float(low) <= designed)})
    return pd.DataFrame(rows)


def markov_ratio_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per grid point and level (``stop``: the planned stop, designed miss rate the runs'
    ``allowed_miss_rate``; else an audit level, designed rate the level): the runs, the calls
    per run, ``designed_bound`` = min(1, calls x designed rate) (the union bound on a run's
    largest ratio exceeding 1), the quantiles (50, 90, 99%) and the largest of the runs'
    ratio ||z - z*||_w / r, the share of runs above 1 with its Clopper-Pearson 95% interval,
    ``consistent`` (the interval's lower end at most the bound), and the runs' largest
    ``markov_iterations`` planned and ``iterations_to_accuracy`` (the first iteration whose
    point met its condition)."""
    from dpminimax.solvers import AUDIT_LEVELS  # imported here: the figure jobs skip torch
    columns = {"stop": "accuracy_ratio",
               **{level: f"accuracy_ratio_{level}" for level in AUDIT_LEVELS}}
    require_columns(table, (*KEYS, *COLUMNS, *columns.values(), "markov_iterations",
                            "iterations_to_accuracy"), "the Markov ratio audit",
                    "run the methods with stopping: markov (solvers.AUDIT_LEVELS)")
    rows = []
    for key, runs in _audited(table).groupby(list(KEYS)):
        calls = float(runs["solver_calls"].max())
        for level, column in columns.items():
            ratios = runs[column].astype(float).to_numpy()
            designed = (float(runs["allowed_miss_rate"].min()) if level == "stop"
                        else AUDIT_LEVELS[level])
            above = int((ratios > 1.0).sum())
            low, high = binomtest(above, len(ratios)).proportion_ci(0.95, method="exact")
            bound = min(1.0, calls * designed)
            q50, q90, q99 = np.quantile(ratios, [0.5, 0.9, 0.99])
            rows.append({**dict(zip(KEYS, key, strict=True)), "level": level,
                         "runs": len(ratios), "calls_per_run": calls,
                         "designed_bound": bound, "ratio_q50": q50, "ratio_q90": q90,
                         "ratio_q99": q99, "ratio_max": float(ratios.max()),
                         "share_above_1": above / len(ratios), "share_ci_low": float(low),
                         "share_ci_high": float(high), "consistent": bool(float(low) <= bound),
                         "markov_iterations": float(runs["markov_iterations"].max()),
                         "iterations_to_accuracy": float(
                             runs["iterations_to_accuracy"].max())})
    return pd.DataFrame(rows)


def _audited(table: pd.DataFrame) -> pd.DataFrame:
    """The runs stopped by Markov's inequality."""
    audited = table[table["solver_calls"].notna()]
    if audited.empty:
        raise ResultsTableError("accuracy audit: no run was stopped by Markov's inequality "
                                "(stopping: markov)")
    return audited


__all__ = ["accuracy_audit_table", "markov_ratio_table"]
