"""Issue #37's weight-cap sweep as one table: per (method, epsilon, W) Table 3's accuracy and the
final KL-DRO objective with its interval and verdict (``table3_accuracy`` and
``table3_objective`` split by ``p_weight_cap``).

    python scripts/dpdro_weight_cap_table.py OUT.csv RUN_DIR [RUN_DIR ...]

Each RUN_DIR holds a ``metrics.parquet`` of one job (``dpminimax train``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from dpminimax.report.dro import table3_accuracy, table3_objective

BY = ("p_weight_cap",)


def main(out: str, *run_dirs: str) -> None:
    runs = pd.concat([pd.read_parquet(Path(d) / "metrics.parquet") for d in run_dirs],
                     ignore_index=True)
    keys = ["dataset", "method", "epsilon", *BY, "label", "n_seeds", "data_standin"]
    table = table3_accuracy(runs, BY).merge(table3_objective(runs, BY), on=keys)
    table.to_csv(out, index=False)
    print(table.drop(columns=["label", "data_standin"]).to_string(index=False))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
