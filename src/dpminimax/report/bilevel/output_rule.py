"""DP bilevel's output-rule ablation (our experiment E9): Alg. 1's output x_{t_out}
(t_out = argmin_t ||x_{t+1} - x_t||, lines 7-8) against the last iterate and a uniformly random
iterate, by their ||G_{F_S,eta}||: mean and 95% interval over seeds per grid point."""

from __future__ import annotations

import pandas as pd

from dpminimax.report.aggregate import require_columns, summary_columns

RULES = {"argmin_step": "gradient_mapping_norm", "last_iterate": "gradient_mapping_norm_last",
         "random_iterate": "gradient_mapping_norm_random"}


def output_rule_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, epsilon, grid point) and column block per output rule."""
    require_columns(table, list(RULES.values()), "the output-rule ablation",
                    "DP bilevel runs record each rule's gradient mapping")
    grid = [c for c in ("p_n", "p_lam") if c in table.columns]
    return summary_columns(table, RULES, ["method", "epsilon", *grid])
