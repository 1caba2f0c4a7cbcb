"""Heart Disease Health Indicators (Alex Teboul, Kaggle; from the CDC's BRFSS 2015 survey).

Format: ``heart_disease_health_indicators_BRFSS2015.csv``, a CSV with the header :data:`COLUMNS`
and 253,680 rows of floats (``0.0``, ``1.0``, ``28.0``, ...). Kaggle needs a login, so there is
no download URL: the file is fetched by hand from :data:`PAGE` (the download is ``archive.zip``;
unzip this CSV from it). No checksum is published, so the file is accepted by content: the exact
header and 253,680 data rows (:mod:`dpminimax.data.sources`), checked whenever it is located.

Preprocessing (from the RaCO-DP code): label
``HeartDiseaseorAttack`` (about 9% positive); sensitive attribute ``Sex`` (0 = female, 1 = male,
BRFSS coding), which stays a feature; all 21 columns other than the label z-scored with train
statistics; 70/30 train/test split (the registry's ``test_fraction=0.3``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpminimax.data.schema import CanonicalFile, TabularTable
from dpminimax.data.sources import csv_content_check, manual_download, read_csv_exact

FILENAME = "heart_disease_health_indicators_BRFSS2015.csv"
PAGE = "https://www.kaggle.com/datasets/alexteboul/heart-disease-health-indicators-dataset"
LABEL = "HeartDiseaseorAttack"
FEATURES = ["HighBP", "HighChol", "CholCheck", "BMI", "Smoker", "Stroke", "Diabetes",
            "PhysActivity", "Fruits", "Veggies", "HvyAlcoholConsump", "AnyHealthcare",
            "NoDocbcCost", "GenHlth", "MentHlth", "PhysHlth", "DiffWalk", "Sex", "Age",
            "Education", "Income"]
COLUMNS = [LABEL, *FEATURES]
LABELS = ["no heart disease or attack", "heart disease or attack"]
GROUPS = ["female", "male"]
EXPECTED_ROWS = 253_680

FILES = (CanonicalFile(
    FILENAME, PAGE, sha256=None,
    fetch=manual_download(f"Kaggle requires a login; sign in at {PAGE}, download archive.zip "
                          f"and unzip {FILENAME} from it into the directory named below"),
    content_check=csv_content_check(COLUMNS, EXPECTED_ROWS, PAGE)),)


def load_heart(paths: Mapping[str, Path]) -> TabularTable:
    """Label ``HeartDiseaseorAttack``, sensitive ``Sex`` (kept among the 21 features)."""
    frame = read_csv_exact(paths[FILENAME], COLUMNS)
    if not frame[LABEL].isin([0, 1]).all() or not frame["Sex"].isin([0, 1]).all():
        raise ValueError(f"{paths[FILENAME]}: {LABEL} and Sex must be 0 or 1")
    return TabularTable(frame=frame, numeric=FEATURES, categorical=[],
                        y=frame[LABEL].to_numpy(np.int64), s=frame["Sex"].to_numpy(np.int64),
                        label_names=LABELS, group_names=GROUPS)


_SAMPLE_LEVELS = {"BMI": (12, 99), "Diabetes": (0, 3), "GenHlth": (1, 6), "MentHlth": (0, 31),
                  "PhysHlth": (0, 31), "Age": (1, 14), "Education": (1, 7), "Income": (1, 9)}


def write_heart_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write ``n_rows`` random respondents in the Kaggle layout (every value a float)."""
    rng = np.random.default_rng(seed)
    columns = {name: rng.integers(*_SAMPLE_LEVELS.get(name, (0, 2)), n_rows).astype(float)
               for name in COLUMNS}
    path = Path(directory) / FILENAME
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(columns).to_csv(path, index=False)
    return [path]
