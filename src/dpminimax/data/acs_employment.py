"""folktables' ACSEmployment task (Ding, Hardt, Miller & Schmidt 2021) without folktables.

Source (the RaCO-DP paper's ACSEmployment, via folktables): ACS PUMS, survey year 2018, horizon
5-Year, person survey, state AL: the Census Bureau's ``csv_pal.zip`` holding ``psam_p01.csv`` (one
row per person, PUMS column names, empty fields for "not applicable"), which is what
``folktables.ACSDataSource(survey_year='2018', horizon='5-Year',
survey='person').get_data(states=['AL'])`` downloads and reads.

The definition is folktables 0.0.12's ``ACSEmployment`` (``folktables/acs.py``): the 16
:data:`FEATURES`, target ``ESR == 1`` (employed; a missing ESR counts as not employed), group
``RAC1P`` (codes 1..9 -> 0..8, :data:`GROUPS`), ``preprocess`` the identity (no row filter) and
``postprocess`` ``np.nan_to_num(x, -1)`` (missing features become -1). folktables' filtered
variant ``employment_filter`` keeps 16 < AGEP < 90 (and PWGTP >= 1); ``age_range`` applies that
age filter on request. RaCO-DP standardises all 16 columns with a ``StandardScaler`` fitted on all
rows before splitting; here, as for every dataset, the z-scores use train statistics (ddof=1).

The Census Bureau publishes no checksum for the zip, so it is accepted by content
(:func:`check_acs_content`): ``psam_p01.csv`` present with every column used here, every record a
person record (RT = P) of Alabama (ST = 1) with a SERIALNO from the 2014-2018 survey years. The
number of rows is not pinned (the paper gives none).
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpminimax.data.errors import ChecksumMismatchError
from dpminimax.data.schema import CanonicalFile, TabularTable

ZIP_NAME = "csv_pal.zip"
CSV_NAME = "psam_p01.csv"
URL = "https://www2.census.gov/programs-surveys/acs/data/pums/2018/5-Year/" + ZIP_NAME
FEATURES = ["AGEP", "SCHL", "MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY",
            "DEAR", "DEYE", "DREM", "SEX", "RAC1P"]
TARGET, GROUP = "ESR", "RAC1P"
LABELS = ["Unemployed", "Employed"]  # the RaCO-DP code's label names
GROUPS = ["White", "Black or African American", "American Indian", "Alaska Native",
          "American Indian and Alaska Native, not specified", "Asian",
          "Native Hawaiian and Other Pacific Islander", "Some Other Race", "Two or More Races"]
STATE_CODE, SURVEY_YEARS = 1, ("2014", "2015", "2016", "2017", "2018")
FOLKTABLES_AGE_FILTER = (16, 90)  # folktables' employment_filter: 16 < AGEP < 90


def read_pums_persons(path: str | Path, columns: list[str]) -> pd.DataFrame:
    """``columns`` of ``psam_p01.csv`` inside the zip at ``path`` (empty fields become NaN)."""
    with zipfile.ZipFile(path) as archive, archive.open(CSV_NAME) as stream:
        try:
            return pd.read_csv(stream, usecols=columns, dtype={"SERIALNO": str, "RT": str})
        except ValueError as err:  # pandas names the missing columns
            raise ValueError(f"{path}: {CSV_NAME}: {err}") from err

def load_acs_employment(paths: Mapping[str, Path], *,
                        age_range: tuple[int, int] | None = None) -> TabularTable:
    """ACSEmployment: features with NaN -> -1, label ESR == 1, group RAC1P - 1.

    ``age_range=(lo, hi)`` keeps only persons with lo < AGEP < hi (None: all persons, as
    folktables' ACSEmployment).
    """
    frame = read_pums_persons(paths[ZIP_NAME], [*FEATURES, TARGET])
    if age_range is not None:
        frame = frame[(frame["AGEP"] > age_range[0]) & (frame["AGEP"] < age_range[1])]
    frame = frame.reset_index(drop=True)
    if not frame[GROUP].isin(range(1, 10)).all():
        raise ValueError(f"{paths[ZIP_NAME]}: RAC1P must be a code 1..9")
    y = (frame[TARGET] == 1).to_numpy(np.int64)
    s = frame[GROUP].to_numpy(np.int64) - 1
    return TabularTable(frame=frame[FEATURES].fillna(-1), numeric=FEATURES, categorical=[], y=y,
                        s=s, label_names=LABELS, group_names=GROUPS)


def check_acs_content(path: Path) -> None:
    """Accept the zip only if it holds 2014-2018 Alabama person records with every used column."""
    try:
        frame = read_pums_persons(path, ["RT", "SERIALNO", "ST", *FEATURES, TARGET])
    except (zipfile.BadZipFile, KeyError, ValueError) as err:
        raise ChecksumMismatchError(f"{path}: not the canonical PUMS zip ({URL}): {err}") from err
    problems = {
        "no person records": frame.empty,
        "records other than person records (RT != P)": not (frame["RT"] == "P").all(),
        f"records from states other than Alabama (ST != {STATE_CODE})":
            not (frame["ST"] == STATE_CODE).all(),
        "SERIALNOs outside the 2014-2018 survey years":
            not frame["SERIALNO"].str[:4].isin(SURVEY_YEARS).all(),
    }
    found = [problem for problem, present in problems.items() if present]
    if found:
        raise ChecksumMismatchError(
            f"{path}: content differs from the canonical {URL} ({'; '.join(found)}). Never used; "
            "replace it with the canonical file.")


FILES = (CanonicalFile(ZIP_NAME, URL, sha256=None, content_check=check_acs_content),)

# Columns written by the sample writer, in PUMS order (a subset of the ~290 real columns).
_SAMPLE_COLUMNS = ["RT", "SERIALNO", "DIVISION", "SPORDER", "PUMA", "REGION", "ST", "ADJINC",
                   "PWGTP", "AGEP", "CIT", "DEAR", "DEYE", "DREM", "MAR", "MIG", "MIL", "RELP",
                   "SCHL", "SEX", "ANC", "DIS", "ESP", "ESR", "NATIVITY", "RAC1P"]


def write_acs_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write ``csv_pal.zip`` with ``n_rows`` random Alabama persons in ``psam_p01.csv``.

    Not-applicable fields are empty as in PUMS: ESR under 16, ESP over 18, MIL under 17,
    SCHL under 3, MIG under 1.
    """
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 96, n_rows)

    def codes(low: int, high: int, applicable: np.ndarray | None = None) -> pd.Series:
        values = pd.Series(rng.integers(low, high + 1, n_rows), dtype="Int64")
        return values if applicable is None else values.where(applicable)

    frame = pd.DataFrame({
        "RT": "P", "SERIALNO": [f"{rng.choice(SURVEY_YEARS)}{i:09d}" for i in range(n_rows)],
        "DIVISION": 6, "SPORDER": codes(1, 6), "PUMA": "00100", "REGION": 3, "ST": "01",
        "ADJINC": 1070673, "PWGTP": codes(1, 300), "AGEP": age, "CIT": codes(1, 5),
        "DEAR": codes(1, 2), "DEYE": codes(1, 2), "DREM": codes(1, 2, age >= 5),
        "MAR": codes(1, 5), "MIG": codes(1, 3, age >= 1), "MIL": codes(1, 4, age >= 17),
        "RELP": codes(0, 17), "SCHL": codes(1, 24, age >= 3), "SEX": codes(1, 2),
        "ANC": codes(1, 4), "DIS": codes(1, 2), "ESP": codes(1, 8, age < 19),
        "ESR": codes(1, 6, age >= 16), "NATIVITY": codes(1, 2), "RAC1P": codes(1, 9),
    })[_SAMPLE_COLUMNS]
    path = Path(directory) / ZIP_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(CSV_NAME, frame.to_csv(index=False))
    return [path]
