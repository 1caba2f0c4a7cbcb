"""The achieved value of a run's rate constraints, ``max_j Gamma_j(theta)`` of its hard predictions
(RaCO-DP eq. 6), read from the results table.

RaCO-DP and non-private SGDA record ``{split}_max_constraint_violation = max_j (Gamma_j - gamma_j)``
for the train and test splits (:meth:`dpminimax.algorithms.fair.racodp.RacoDp.extra_metrics`). Every
constraint of a run has the same target ``p_gamma`` (one gamma per constraint config entry), so
the achieved value is that violation plus gamma. For the positive-class false-negative-rate
constraint (J = 1: FNR only; Table 1's "for all k" would add FPR) it is the split's FNR, ``Pr[y_hat
= 0 | y = 1]`` (1 - recall), the quantity of RaCO-DP Figs. 5 and 8a.
"""

from __future__ import annotations

import pandas as pd

from dpminimax.report.aggregate import ResultsTableError
from dpminimax.trivial import PREFIX

SPLITS = ("train", "test")
TARGET_COLUMN = "p_gamma"
CONSTRAINT_COLUMN = "p_constraint"
#: How each constraint kind's achieved value is named on an axis.
CONSTRAINT_NAMES = {
    "false_negative_rate": "false negative rate",
    "demographic_parity": "demographic-parity constraint value",
    "equalized_odds": "equalized-odds constraint value",
}


def value_column(split: str) -> str:
    """The column :func:`with_constraint_values` writes for ``split``."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return f"{split}_constraint_value"


def with_constraint_values(df: pd.DataFrame, constraint: str) -> pd.DataFrame:
    """The runs of ``df`` trained under constraint kind ``constraint``, with the achieved values
    ``train_constraint_value`` and ``test_constraint_value`` added (violation + gamma), and
    the same of the majority predictor (``trivial_...``) where the runs record it."""
    needed = [CONSTRAINT_COLUMN, TARGET_COLUMN,
              *(f"{split}_max_constraint_violation" for split in SPLITS)]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ResultsTableError(
            f"achieved {constraint!r} constraint values: no column(s) {missing}")
    rows = df.loc[df[CONSTRAINT_COLUMN] == constraint].copy()
    if rows.empty:
        raise ValueError(f"no run was trained under the {constraint!r} constraint")
    for split in SPLITS:
        for name in ("", PREFIX):  # the run's, and its trivial baseline's where recorded
            if f"{name}{split}_max_constraint_violation" in rows.columns:
                rows[name + value_column(split)] = (
                    pd.to_numeric(rows[f"{name}{split}_max_constraint_violation"])
                    + pd.to_numeric(rows[TARGET_COLUMN]))
    return rows
