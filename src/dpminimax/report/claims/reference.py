"""Numbers the papers report, kept next to our results for comparison.

* :func:`load_reported` reads the baselines a paper plots but did not run itself, e.g.
  ``papers/racodp/reference/reported_baselines.csv``: the DP-FERMI repository's (Gupta 2023)
  DP-FERMI, Tran et al. 2021a/b and Jagielski et al. 2019 points that RaCO-DP plots in Fig. 4
  (demographic parity) and Fig. 6 (equalized odds), decoded from the DP-FERMI repository's result
  files.
* :func:`load_claims` reads ``papers/<paper>/claims.yaml``: every number a paper states that a
  reproduction can be held to (RaCO-DP: Figs. 2a, 5b, 8a, 9 and Table 2), with its tolerance, the
  verbatim quote and the metric we measure it with.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from dpminimax.report.claims.claim_rules import check_claim

REPORTED_COLUMNS = (
    "source", "constraint", "dataset", "epsilon", "method", "method_label", "fairness_weight",
    "test_error", "violation", "violation_lower", "violation_upper",
)
REPORTED_NUMERIC = (
    "epsilon", "fairness_weight", "test_error", "violation", "violation_lower", "violation_upper",
)
CONSTRAINT_VIOLATION = {  # reported ``constraint`` -> our metric column (Figs. 4 and 6)
    "demographic_parity": "dp_violation",
    "equalized_odds": "eo_violation",
}
CLAIM_KEYS = (
    "id", "figure", "quantity", "value", "unit", "tolerance", "source_quote", "measure",
)


class ReferenceFileError(ValueError):
    """A reference file (reported numbers or claims) does not have the expected structure."""


def load_reported(path: str | os.PathLike) -> pd.DataFrame:
    """Reported baseline points, one row per (constraint, dataset, epsilon, method, lambda/point).

    Columns :data:`REPORTED_COLUMNS` (optional extra: ``point``, the index of a point along a
    curve without a fairness weight, e.g. Jagielski et al. 2019). ``epsilon`` is float with
    ``inf`` for non-private; ``fairness_weight`` and the band are NaN where the source has none
    (single points). Raises :class:`ReferenceFileError` naming the file and the missing column.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"reported-numbers file {path} does not exist")
    table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    missing = [c for c in REPORTED_COLUMNS if c not in table.columns]
    if missing:
        raise ReferenceFileError(
            f"{path}: missing column(s) {', '.join(map(repr, missing))} "
            f"(has {', '.join(map(str, table.columns))})"
        )
    for column in REPORTED_NUMERIC:
        try:
            table[column] = pd.to_numeric(table[column]).astype(float)
        except (TypeError, ValueError) as exc:
            raise ReferenceFileError(f"{path}: column {column!r} is not numeric ({exc})") from exc
    if "point" in table.columns:
        table["point"] = pd.to_numeric(table["point"]).astype("Int64")
    for column in ("source", "constraint", "dataset", "method", "method_label"):
        table[column] = table[column].astype(str)
    unknown = sorted(set(table["constraint"]) - set(CONSTRAINT_VIOLATION))
    if unknown:
        raise ReferenceFileError(
            f"{path}: column 'constraint' has unknown value(s) {unknown}; "
            f"known: {sorted(CONSTRAINT_VIOLATION)}"
        )
    return table


def load_claims(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The claims of a paper: the list under ``claims:`` in a YAML file.

    Every claim must have the keys :data:`CLAIM_KEYS` (``value``, ``unit`` and ``tolerance`` may
    be null only for ``comparison: qualitative``) and a unique ``id``, and its optional keys
    (``kind``, ``interval``, ``trivial``, a rate's ``measure.window``) and measure must be of
    :mod:`.claim_rules`' vocabulary (:func:`.claim_rules.check_claim`); otherwise
    :class:`ReferenceFileError` names the file, the claim and what is wrong, in one line.
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"claims file {path} does not exist")
    with path.open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    claims = document.get("claims") if isinstance(document, dict) else None
    if not isinstance(claims, list):
        raise ReferenceFileError(f"{path}: expected a top-level 'claims:' list")
    seen: set[str] = set()
    for index, claim in enumerate(claims):
        name = claim.get("id", f"#{index}") if isinstance(claim, dict) else f"#{index}"
        if not isinstance(claim, dict):
            raise ReferenceFileError(f"{path}: claim {name} is not a mapping")
        missing = [key for key in CLAIM_KEYS if key not in claim]
        if missing:
            raise ReferenceFileError(
                f"{path}: claim {name!r} is missing key(s) {', '.join(map(repr, missing))}"
            )
        if claim.get("comparison") != "qualitative":
            empty = [k for k in ("value", "unit", "tolerance") if claim[k] is None]
            if empty:
                raise ReferenceFileError(
                    f"{path}: claim {name!r} has no {', '.join(map(repr, empty))} "
                    "(only 'comparison: qualitative' claims may leave them empty)"
                )
        if not str(claim["source_quote"]).strip():
            raise ReferenceFileError(f"{path}: claim {name!r} has an empty 'source_quote'")
        try:
            check_claim(claim)
        except (KeyError, TypeError, ValueError) as exc:
            raise ReferenceFileError(f"{path}: claim {name!r}: {exc}") from exc
        if name in seen:
            raise ReferenceFileError(f"{path}: duplicate claim id {name!r}")
        seen.add(name)
    return claims
