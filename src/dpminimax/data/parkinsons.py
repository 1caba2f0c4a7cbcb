"""Parkinsons Telemonitoring data (Tsanas et al. 2010; UCI): ``parkinsons_updrs.data``.

Format (UCI): CSV with the header :data:`COLUMNS`, 5,875 voice recordings of 42 patients. UCI
publishes no checksum, so the file is accepted by content (exact header, 5,875 data rows; see
:mod:`dpminimax.data.sources`). The paper's "Parkinsons (Little 2007)" is this telemonitoring data
(the RaCO-DP paper misnames the dataset).

Preprocessing (as the released code): label ``total_UPDRS`` greater than its
median over the whole file (27.576 on the canonical file: 2,934 above, 2,941 not); sensitive
attribute ``sex`` (0 = male, 1 = female; not a feature); the 19 features age, test_time,
motor_UPDRS and the 16 voice measures, all z-scored with train statistics; ``subject#`` dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpminimax.data.schema import CanonicalFile, TabularTable
from dpminimax.data.sources import csv_content_check, read_csv_exact

FILENAME = "parkinsons_updrs.data"
URL = ("https://archive.ics.uci.edu/ml/machine-learning-databases/parkinsons/telemonitoring/"
       + FILENAME)
VOICE = ["Jitter(%)", "Jitter(Abs)", "Jitter:RAP", "Jitter:PPQ5", "Jitter:DDP", "Shimmer",
         "Shimmer(dB)", "Shimmer:APQ3", "Shimmer:APQ5", "Shimmer:APQ11", "Shimmer:DDA", "NHR",
         "HNR", "RPDE", "DFA", "PPE"]
COLUMNS = ["subject#", "age", "sex", "test_time", "motor_UPDRS", "total_UPDRS", *VOICE]
FEATURES = ["age", "test_time", "motor_UPDRS", *VOICE]
LABEL = "total_UPDRS"
LABELS = ["total_UPDRS <= median", "total_UPDRS > median"]
GROUPS = ["male", "female"]
EXPECTED_ROWS = 5_875

FILES = (CanonicalFile(FILENAME, URL, sha256=None,
                       content_check=csv_content_check(COLUMNS, EXPECTED_ROWS, URL)),)


def load_parkinsons(paths: Mapping[str, Path]) -> TabularTable:
    """Label ``total_UPDRS > median`` (median of the whole file), sensitive ``sex``."""
    frame = read_csv_exact(paths[FILENAME], COLUMNS)
    if not frame["sex"].isin([0, 1]).all():
        raise ValueError(f"{paths[FILENAME]}: sex must be 0 (male) or 1 (female)")
    y = (frame[LABEL] > frame[LABEL].median()).to_numpy(np.int64)
    return TabularTable(frame=frame, numeric=FEATURES, categorical=[], y=y,
                        s=frame["sex"].to_numpy(np.int64), label_names=LABELS, group_names=GROUPS)


def write_parkinsons_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write ``n_rows`` random recordings in the UCI layout (header, comma-separated)."""
    rng = np.random.default_rng(seed)
    motor = rng.uniform(5.0, 40.0, n_rows)
    columns = {
        "subject#": rng.integers(1, 43, n_rows), "age": rng.integers(36, 86, n_rows),
        "sex": rng.integers(0, 2, n_rows), "test_time": rng.uniform(-4.3, 216.0, n_rows),
        "motor_UPDRS": motor, "total_UPDRS": motor * 1.3 + rng.uniform(0.0, 5.0, n_rows),
        **{name: rng.lognormal(-4.0, 1.0, n_rows) for name in VOICE},
    }
    path = Path(directory) / FILENAME
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(columns)[COLUMNS].to_csv(path, index=False, float_format="%.6g")
    return [path]
