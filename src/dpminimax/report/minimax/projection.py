"""BYOA's projection ablation (issue 36): the output-perturbation methods (Algs. 1, 3, 4 o 5,
the direct method B1 / B9) with and without their releases projected onto the balls (method
parameter ``project``; post-processing, the same privacy record). The runs of one seed share
their sample and noise streams, so the two arms are paired seed by seed.

One row per (problem, method, epsilon, n): the seeds paired, the share of the unprojected
releases that left their ball (``release_outside_ball``), the seed-mean error of each arm (the
problem's utility metric: excess population risk, strong gap or primal gap), their ratio
(projected over unprojected) and the share of seeds whose error the projection did not raise.
"""

from __future__ import annotations

import pandas as pd

from dpminimax.report.aggregate import ResultsTableError, require_columns

#: The utility metric of each kind of problem, the first present in a row.
METRICS = ("excess_population_risk", "population_strong_gap", "population_primal_gap")
KEYS = ("dataset", "method", "epsilon", "p_n")


def projection_ablation_table(table: pd.DataFrame) -> pd.DataFrame:
    """The paired effect of ``project`` per grid point (module docstring)."""
    require_columns(table, (*KEYS, "seed", "p_project", "release_outside_ball"),
                    "the projection ablation", "run the methods with project: [false, true]")
    rows = []
    for key, runs in table.groupby(list(KEYS)):
        metric = next((m for m in METRICS if m in runs and runs[m].notna().all()), None)
        if metric is None:
            raise ResultsTableError(f"projection ablation: no utility metric of {METRICS} on "
                                    f"every run of {dict(zip(KEYS, key, strict=True))}")
        arms = {flag: runs[runs["p_project"].astype(bool) == flag].set_index("seed")
                for flag in (False, True)}
        seeds = arms[False].index.intersection(arms[True].index)
        if seeds.empty:
            continue
        plain, projected = (arms[flag].loc[seeds] for flag in (False, True))
        rows.append({**dict(zip(KEYS, key, strict=True)), "metric": metric,
                     "seeds": len(seeds),
                     "release_outside_ball": float(plain["release_outside_ball"].mean()),
                     "error_unprojected": float(plain[metric].mean()),
                     "error_projected": float(projected[metric].mean()),
                     "ratio": float(projected[metric].mean() / plain[metric].mean()),
                     "share_not_worse": float(
                         (projected[metric] <= plain[metric] * (1 + 1e-12)).mean())})
    if not rows:
        raise ResultsTableError("projection ablation: no seed ran with both project: false "
                                "and project: true")
    return pd.DataFrame(rows)


__all__ = ["projection_ablation_table"]
