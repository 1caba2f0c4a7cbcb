"""Retired Adult: the IPUMS Adult reconstruction of Ding, Hardt, Miller & Schmidt (2021).

Canonical file: ``adult_reconstruction.csv`` in the folktables repository (:data:`URL`), a CSV
with a header and 49,531 rows (folktables' datasheet) from the 1994 CPS ASEC: the UCI Adult
features without ``fnlwgt``, ``sex`` renamed ``gender``, and ``income`` as a number (dollars)
instead of a binarised label. No checksum is published, so the file is accepted by content
(:func:`check_retired_content`): exactly the 14 columns of :data:`COLUMNS` and 49,531 data rows.
The column *names* are those every public loader of the file uses; the header's column *order*
could not be confirmed verbatim here, so the check accepts the 14 names in any order and the
loader selects columns by name.

Preprocessing (as the released DP-FERMI code): drop every row with a missing
value (an empty field or ``?``); label ``income > 50,000`` (1) vs ``<= 50,000`` (0); sensitive
attribute ``gender`` coded Male = 0, Female = 1 (not a feature); z-score age, education-num,
capital-gain, capital-loss and hours-per-week with train statistics; one-hot the 7 categorical
columns of UCI Adult (:data:`dpminimax.data.adult.CATEGORICAL`). With the UCI Adult levels
(:data:`LEVELS`, 7+16+7+14+6+5+41 = 96) that is 5 + 96 = 101 features, the count of the paper's
code. The reconstruction's own level lists are not published apart from the file; they are
assumed to be UCI Adult's ("IPUMS Adult uses the same features as the original UCI Adult
dataset", folktables datasheet), and the feature count on the real file is checked by the
real-data test. The stored DP-FERMI results imply about 45,849 rows after cleaning.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpminimax.data.adult import CATEGORICAL, GROUPS, category_codes
from dpminimax.data.schema import CanonicalFile, TabularTable
from dpminimax.data.sources import csv_content_check

FILENAME = "adult_reconstruction.csv"
URL = "https://raw.githubusercontent.com/socialfoundations/folktables/main/" + FILENAME
NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
SENSITIVE, TARGET = "gender", "income"
# Believed header order of the canonical file (not confirmed verbatim; see the module docstring).
COLUMNS = ["hours-per-week", "age", "capital-gain", "capital-loss", "workclass", "education",
           "education-num", "marital-status", "relationship", "race", SENSITIVE,
           "native-country", TARGET, "occupation"]
INCOME_THRESHOLD = 50_000
LABELS = ["<=50,000", ">50,000"]
EXPECTED_ROWS = 49_531
MISSING = ["", "?"]
# UCI Adult's levels (adult.names) without '?' and without workclass 'Never-worked', which UCI
# Adult only has in rows with a missing occupation.
LEVELS = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                  "State-gov", "Without-pay"],
    "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
                  "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th",
                  "Doctorate", "5th-6th", "Preschool"],
    "marital-status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                   "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
                   "Armed-Forces"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                     "Unmarried"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "native-country": ["United-States", "Cambodia", "England", "Puerto-Rico", "Canada",
                       "Germany", "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece",
                       "South", "China", "Cuba", "Iran", "Honduras", "Philippines", "Italy",
                       "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal", "Ireland", "France",
                       "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia",
                       "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia",
                       "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"],
}


def check_retired_content(path: Path) -> None:
    """Accept the CSV only with the 14 columns of :data:`COLUMNS` (any order) and 49,531 rows.

    :func:`dpminimax.data.sources.csv_content_check` does the check, with the file's own header
    order when its names are exactly :data:`COLUMNS` (otherwise with :data:`COLUMNS`, so the
    error names the expected header).
    """
    with open(path, newline="") as stream:
        found = next(csv.reader(stream), [])
    header = found if sorted(found) == sorted(COLUMNS) else COLUMNS
    csv_content_check(header, EXPECTED_ROWS, URL)(path)


FILES = (CanonicalFile(FILENAME, URL, sha256=None, content_check=check_retired_content),)


def read_retired_file(path: str | Path) -> pd.DataFrame:
    """The canonical CSV as a frame of :data:`COLUMNS`; empty fields and ``?`` become missing."""
    frame = pd.read_csv(path, na_values=MISSING, keep_default_na=False, skipinitialspace=True)
    if sorted(frame.columns) != sorted(COLUMNS):
        raise ValueError(f"{path}: columns {list(frame.columns)}; expected {COLUMNS}")
    return frame[COLUMNS]


def load_retired_adult(paths: Mapping[str, Path]) -> TabularTable:
    """Drop rows with missing values; label ``income > 50,000``; sensitive ``gender``."""
    frame = read_retired_file(paths[FILENAME]).dropna().reset_index(drop=True)
    return TabularTable(
        frame=frame, numeric=NUMERIC, categorical=CATEGORICAL,
        y=(frame[TARGET] > INCOME_THRESHOLD).to_numpy(np.int64),
        s=category_codes(frame[SENSITIVE], GROUPS), label_names=LABELS, group_names=GROUPS,
    )


def write_retired_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write ``n_rows`` random persons in the canonical layout (header, comma-separated).

    Every categorical column cycles through all of its :data:`LEVELS` (shuffled), so a sample
    of at least 41 rows contains every level; about 5% of the rows have an empty field in
    workclass, occupation or native-country (missing, as in the real file).
    """
    rng = np.random.default_rng(seed)
    columns = {name: rng.permutation(np.resize(np.array(levels, dtype=object), n_rows))
               for name, levels in LEVELS.items()}
    columns |= {
        "age": rng.integers(17, 91, n_rows), "education-num": rng.integers(1, 17, n_rows),
        "capital-gain": rng.choice([0, 0, 0, 5178, 15024], n_rows),
        "capital-loss": rng.choice([0, 0, 0, 1902], n_rows),
        "hours-per-week": rng.integers(1, 100, n_rows),
        SENSITIVE: rng.choice(GROUPS, n_rows),
        TARGET: rng.choice([0, 12_000, 38_500, 50_000, 50_001, 87_300, 250_000], n_rows),
    }
    frame = pd.DataFrame(columns)[COLUMNS]
    for row in np.flatnonzero(rng.random(n_rows) < 0.05):
        frame.loc[row, rng.choice(["workclass", "occupation", "native-country"])] = ""
    path = Path(directory) / FILENAME
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return [path]
