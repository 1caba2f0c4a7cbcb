"""The accuracy-condition audit of BYOA (spec 003 §6 E9): how often a base solver stopped by
Markov's inequality on its a-priori rate (no certificate) returned a point that misses the
accuracy condition of Algs. 1-5, beside the failure probability the paper's proofs allow it
(delta / 4 on a minimization problem, delta / 8 on a game, per call).

One row per (problem, method, base solver, epsilon, n): the solver calls over the seeds, the
calls that missed, the observed rate with its exact (Clopper-Pearson) 95% interval and the
designed rate (the runs' ``allowed_miss_rate``, which the solvers record); ``consistent`` is
false where the interval's lower end is above the designed rate (the observed failures refute
the design). With few calls and no failure the interval's upper end stays far above
delta / 4: the audit can refute the design, not confirm it.
"""

from __future__ import annotations

import pandas as pd
from scipy.stats import binomtest

from dpminimax.report.aggregate import ResultsTableError, require_columns

KEYS = ("dataset", "method", "p_solver", "epsilon", "p_n")
COLUMNS = ("accuracy_violations", "solver_calls", "allowed_miss_rate")


def accuracy_audit_table(table: pd.DataFrame) -> pd.DataFrame:
    """Solver calls and accuracy violations per grid point, against the designed rate."""
    require_columns(table, (*KEYS, *COLUMNS), "the accuracy audit",
                    "run the methods with stopping: markov")
    audited = table[table["solver_calls"].notna()]
    if audited.empty:
        raise ResultsTableError("accuracy audit: no run was stopped by Markov's inequality "
                                "(stopping: markov)")
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


__all__ = ["accuracy_audit_table"]
