"""UCI "default of credit card clients" (Yeh & Lien 2009, Taiwan, 30,000 clients).

The canonical source is UCI's spreadsheet (:data:`XLS_URL`, a header row X1..X23/Y above the
column names). The verified artefact is its content as CSV, ``default_of_credit_card_clients.csv``
(header ``ID,LIMIT_BAL,...,default payment next month``; UCI codes SEX 1=male 2=female, EDUCATION
0..6, MARRIAGE 0..3), pinned by sha256. Without a local copy the spreadsheet is downloaded and
converted with ``pandas.read_excel(header=1).to_csv(index=False)`` (needs ``xlrd``). Those bytes are
not guaranteed to equal the pinned CSV (pandas/xlrd versions may format differently), so a
CSV whose sha256 differs is accepted only if its *parsed content* is the pinned content: the
sha256 of its 30,000 x 25 integer table (:data:`CONTENT_SHA256`), checked every time it is
located; the acceptance is recorded in the dataset's meta (``verified_by``), never silent.

Preprocessing (as the released DP-FERMI code): label ``default payment next month``; sensitive
attribute SEX coded male = 0, female = 1 (not a feature); z-score LIMIT_BAL, AGE, BILL_AMT1-6,
PAY_AMT1-6 (14) with train statistics; merge EDUCATION {0, 5, 6} -> 4 and MARRIAGE 0 -> 3; one-hot
EDUCATION (4), MARRIAGE (3), PAY_0, PAY_2..PAY_6 (11+11+11+11+10+10) at their raw levels: 85.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpminimax.data.download import download
from dpminimax.data.errors import ChecksumMismatchError
from dpminimax.data.schema import CanonicalFile, TabularTable

XLS_URL = ("https://archive.ics.uci.edu/ml/machine-learning-databases/00350/"
           "default%20of%20credit%20card%20clients.xls")
CSV_NAME = "default_of_credit_card_clients.csv"
CSV_SHA256 = "4edce6da569b2c30788a85fd98a9bafb1a983e8ca1a7aac875dd7ff853cbd0bb"
# sha256 of the pinned CSV's table of COLUMNS as little-endian int64, row-major (content_digest).
CONTENT_SHA256 = "7d0c12ad5a87c1ba4b09d18a85664be31614e173fe5fb6feca9bfb568e3f6749"
LABEL = "default payment next month"
PAY = ["PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6"]
BILL = [f"BILL_AMT{i}" for i in range(1, 7)]
PAY_AMT = [f"PAY_AMT{i}" for i in range(1, 7)]
COLUMNS = ["ID", "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", *PAY, *BILL, *PAY_AMT, LABEL]
NUMERIC = ["LIMIT_BAL", "AGE", *BILL, *PAY_AMT]
CATEGORICAL = ["EDUCATION", "MARRIAGE", *PAY]
LABELS = ["no default", "default"]
GROUPS = ["male", "female"]
#: Clients in the real table (a stand-in's size).
ROWS = 30_000
EXPECTED_ROWS, EXPECTED_DEFAULTS = 30_000, 6_636


def read_credit_csv(path: str | Path) -> pd.DataFrame:
    """The CSV as a frame of :data:`COLUMNS` (also accepts the spreadsheet's X1..X23 header row)."""
    frame = pd.read_csv(path)
    if "LIMIT_BAL" not in frame.columns:
        frame = pd.read_csv(path, header=1)
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {COLUMNS}")
    return frame[COLUMNS].astype(np.int64)


def load_credit_card(paths: Mapping[str, Path]) -> TabularTable:
    """Code label and SEX, merge the undocumented EDUCATION / MARRIAGE codes."""
    frame = read_credit_csv(paths[CSV_NAME])
    frame["EDUCATION"] = frame["EDUCATION"].replace({0: 4, 5: 4, 6: 4})
    frame["MARRIAGE"] = frame["MARRIAGE"].replace({0: 3})
    if not frame["SEX"].isin([1, 2]).all() or not frame[LABEL].isin([0, 1]).all():
        raise ValueError(f"{paths[CSV_NAME]}: SEX must be 1/2 and {LABEL!r} 0/1")
    return TabularTable(
        frame=frame, numeric=NUMERIC, categorical=CATEGORICAL,
        y=frame[LABEL].to_numpy(np.int64), s=(frame["SEX"] - 1).to_numpy(np.int64),
        label_names=LABELS, group_names=GROUPS,
    )


def fetch_credit_csv(dest: Path) -> None:
    """Download the UCI spreadsheet and write its content to ``dest`` in the CSV layout."""
    try:
        import xlrd  # noqa: F401  (pandas' engine for .xls)
    except ImportError as err:
        raise ImportError(
            "converting the UCI spreadsheet needs xlrd: `pip install xlrd`, or put "
            f"{CSV_NAME} on the data search path yourself") from err
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        xls = Path(tmp) / "default of credit card clients.xls"
        download(XLS_URL, xls)
        pd.read_excel(xls, header=1, engine="xlrd").to_csv(dest, index=False)


def content_digest(frame: pd.DataFrame) -> str:
    """sha256 of the table of :data:`COLUMNS` as little-endian int64, row-major: the content
    of the CSV whatever its text formatting."""
    table = np.ascontiguousarray(frame[COLUMNS].to_numpy("<i8"))
    return hashlib.sha256(table.tobytes()).hexdigest()


def check_credit_content(path: Path) -> None:
    """Accept a CSV whose bytes differ from the pinned copy only if its parsed table is the
    pinned table (:data:`CONTENT_SHA256`)."""
    frame = read_credit_csv(path)
    actual = content_digest(frame)
    if actual != CONTENT_SHA256:
        raise ChecksumMismatchError(
            f"{path}: content differs from the canonical table ({len(frame)} rows, "
            f"{int(frame[LABEL].sum())} defaults, content sha256 {actual}; expected "
            f"{EXPECTED_ROWS} rows, {EXPECTED_DEFAULTS} defaults, content sha256 "
            f"{CONTENT_SHA256}). Never used; replace it with the canonical file ({XLS_URL}).")


FILES = (CanonicalFile(CSV_NAME, XLS_URL, CSV_SHA256, fetch=fetch_credit_csv,
                       content_check=check_credit_content),)


def write_credit_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write ``n_rows`` random clients in the CSV layout (all raw codes, including 0/5/6)."""
    rng = np.random.default_rng(seed)
    columns = {
        "ID": np.arange(1, n_rows + 1),
        "LIMIT_BAL": rng.integers(1, 100, n_rows) * 10_000,
        "SEX": rng.integers(1, 3, n_rows),
        "EDUCATION": rng.integers(0, 7, n_rows),
        "MARRIAGE": rng.integers(0, 4, n_rows),
        "AGE": rng.integers(21, 80, n_rows),
        **{name: rng.integers(-2, 9, n_rows) for name in PAY},
        **{name: rng.integers(-5_000, 500_000, n_rows) for name in BILL},
        **{name: rng.integers(0, 50_000, n_rows) for name in PAY_AMT},
        LABEL: rng.integers(0, 2, n_rows),
    }
    path = Path(directory) / CSV_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(columns).to_csv(path, index=False)
    return [path]
