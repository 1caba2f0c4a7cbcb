"""UCI Adult (Census Income; Becker & Kohavi 1996): the canonical ``adult.data`` + ``adult.test``.

Format (UCI): comma+space separated, no header, missing values as ``?``; ``adult.test`` starts with
the line ``|1x3 Cross validator`` and its labels end with ``.``. Preprocessing (as the
released RaCO-DP and DP-FERMI code): combine both files, drop every row containing ``?`` (45,222
rows), label ``income > 50K`` (1) vs ``<= 50K`` (0), sensitive attribute ``sex`` coded Male = 0,
Female = 1 (not a feature); z-score the 6 numeric columns with train statistics; one-hot the 7
categorical columns: 6 + (7+16+7+14+6+5+41) = 102 features.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpminimax.data.schema import CanonicalFile, TabularTable

BASE_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
FILES = (
    CanonicalFile("adult.data", BASE_URL + "adult.data",
                  "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"),
    CanonicalFile("adult.test", BASE_URL + "adult.test",
                  "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"),
)
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country", "income"]
NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CATEGORICAL = ["workclass", "education", "marital-status", "occupation", "relationship", "race",
               "native-country"]
LABELS = ["<=50K", ">50K"]
GROUPS = ["Male", "Female"]
TEST_HEADER = "|1x3 Cross validator"
#: Rows of the real ``adult.data`` (the stand-in's size, so a run without the files plans the
#: same batch rates and steps).
TRAIN_ROWS = 32_561
#: Probability that a stand-in's categorical value is ``?`` (the parser drops such rows).
SAMPLE_MISSING_RATE = 0.025


def read_adult_file(path: str | Path) -> pd.DataFrame:
    """One UCI Adult file as a frame of :data:`COLUMNS`; ``?`` becomes missing, '.' is stripped."""
    frame = pd.read_csv(path, header=None, names=COLUMNS, skipinitialspace=True, comment="|",
                        na_values=["?"], keep_default_na=False, skip_blank_lines=True)
    frame["income"] = frame["income"].str.rstrip(".")
    return frame


def load_adult(paths: Mapping[str, Path]) -> TabularTable:
    """Combine ``adult.data`` and ``adult.test``, drop rows with ``?``, code label and sex."""
    frame = pd.concat([read_adult_file(paths[f.filename]) for f in FILES], ignore_index=True)
    frame = frame.dropna().reset_index(drop=True)
    return TabularTable(
        frame=frame, numeric=NUMERIC, categorical=CATEGORICAL,
        y=category_codes(frame["income"], LABELS), s=category_codes(frame["sex"], GROUPS),
        label_names=LABELS, group_names=GROUPS,
    )


def category_codes(column: pd.Series, levels: list[str]) -> np.ndarray:
    unknown = set(column.unique()) - set(levels)
    if unknown:
        raise ValueError(f"column {column.name!r}: unexpected values {sorted(unknown)}")
    return pd.Categorical(column, categories=levels).codes.astype(np.int64)


_SAMPLE_LEVELS = {
    "workclass": ["Private", "Self-emp-not-inc", "State-gov", "?"],
    "education": ["Bachelors", "HS-grad", "11th", "Masters"],
    "marital-status": ["Never-married", "Married-civ-spouse", "Divorced"],
    "occupation": ["Adm-clerical", "Exec-managerial", "Craft-repair", "?"],
    "relationship": ["Husband", "Wife", "Own-child", "Not-in-family"],
    "race": ["White", "Black", "Asian-Pac-Islander"],
    "sex": GROUPS,
    "native-country": ["United-States", "Mexico", "India", "?"],
}


def write_adult_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write ``adult.data`` with ``n_rows`` random rows and ``adult.test`` with half as many
    (the real files' ratio, 32,561 : 16,281), UCI format; a categorical value is ``?`` with
    probability :data:`SAMPLE_MISSING_RATE` (about 7% of the real rows have one)."""
    rng = np.random.default_rng(seed)
    written = []
    for file in FILES:
        is_test = file.filename == "adult.test"
        rows = max(n_rows // 2, 1) if is_test else n_rows
        columns = {name: _sample_levels(rng, levels, rows)
                   for name, levels in _SAMPLE_LEVELS.items()}
        columns |= {"age": rng.integers(17, 91, rows),
                    "fnlwgt": rng.integers(10_000, 1_500_000, rows),
                    "education-num": rng.integers(1, 17, rows),
                    "capital-gain": rng.choice([0, 5178], rows),
                    "capital-loss": rng.choice([0, 1902], rows),
                    "hours-per-week": rng.integers(1, 100, rows),
                    "income": rng.choice(LABELS, rows).astype(object) + ("." if is_test else "")}
        table = np.column_stack([np.asarray(columns[c]).astype(str) for c in COLUMNS])
        lines = [TEST_HEADER] if is_test else []
        lines += [", ".join(row) for row in table]
        path = Path(directory) / file.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n\n")  # the UCI files end with an empty line
        written.append(path)
    return written


def _sample_levels(rng: np.random.Generator, levels: list[str], rows: int) -> np.ndarray:
    """``rows`` draws of ``levels``; ``?``, where it is a level, at :data:`SAMPLE_MISSING_RATE`."""
    known = [level for level in levels if level != "?"]
    if len(known) == len(levels):
        return rng.choice(levels, rows)
    p = [SAMPLE_MISSING_RATE if level == "?" else (1 - SAMPLE_MISSING_RATE) / len(known)
         for level in levels]
    return rng.choice(levels, rows, p=p)
