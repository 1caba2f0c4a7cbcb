"""Every paper's claims.yaml under the issue-36 schema, and its trivial-output test: in a
runs table built from each claim's own measure, a method whose output is replaced by the
trivial baseline's meets no informative reproduction claim."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpminimax.report.claims.claim_rules import (
    NOT_REPRODUCED,
    REPRODUCED,
    UNINFORMATIVE,
    accepted_band,
)
from dpminimax.report.claims.claims import claims_table
from dpminimax.report.claims.reference import load_claims

ROOT = Path(__file__).resolve().parents[4]
PAPERS = ("racodp", "dpfermi", "bilevel", "byoa", "dpdro")
SEEDS = 3


def _claims(paper):
    return load_claims(ROOT / "papers" / paper / "claims.yaml")


@pytest.mark.parametrize("paper", PAPERS)
def test_every_claim_validates(paper):
    claims = _claims(paper)
    assert claims
    for claim in claims:
        if claim.get("measure", {}).get("agg") == "loglog_slope":
            assert "window" in claim["measure"], claim["id"]


def _from_runs(claim):
    measure = claim["measure"]
    return (claim["comparison"] != "qualitative" and claim.get("kind", "reproduction")
            == "reproduction" and ("filter" in measure or "agg" in measure))


def _targets(claim):
    """A value the claim accepts, well inside, and one it rejects, well outside."""
    lo, hi = accepted_band(float(claim["value"]), claim["tolerance"])
    room = max(1.0, abs(lo), abs(hi))
    return {"approx": ((lo + hi) / 2, hi + room), "at_most": (hi - 0.5 * room, hi + room),
            "below": (hi - 0.5 * room, hi + room), "at_least": (lo + 0.5 * room, lo - room),
            "above": (lo + 0.5 * room, lo - room)}[claim["comparison"]]


def _levels(column, wanted, measure):
    """Values of a filter or ``by`` column the claim's filter keeps (a slope's x: three inside
    its window and the filter's range)."""
    if measure["agg"] == "loglog_slope" and column == measure["by"][0]:
        window = measure["window"]
        low, high = float(window["min"]), float(window["max"])
        if isinstance(wanted, dict):
            low, high = max(low, float(wanted.get("min", low))), min(high, float(
                wanted.get("max", high)))
        low = max(low, 1e-3)
        high = high if math.isfinite(high) else low * 1e3
        return list(np.geomspace(low, high, 3)) if high > low else [low]
    if isinstance(wanted, dict):
        return [float(wanted.get("min", wanted.get("max", 0.0)))]
    if isinstance(wanted, list):
        return wanted[:2]
    return [wanted] if wanted is not None else [1.0, 2.0]


def _synthetic_runs(claim, value, trivial_value):
    """Runs matching the claim's measure (its filter, SEEDS runs per ``by`` group, the
    reference runs of a ratio) whose metric measures ``value`` and whose trivial column
    measures ``trivial_value``."""
    measure = claim["measure"]
    metric, by = measure["metric"], list(measure.get("by") or [])
    filters = dict(measure.get("filter") or {})
    trivial = claim.get("trivial")
    column = trivial["metric"] if isinstance(trivial, dict) else f"trivial_{metric}"
    base = {c: _levels(c, w, measure)[0] for c, w in filters.items()}
    if "dataset" not in base and claim.get("dataset") is not None:
        base["dataset"] = claim["dataset"][0] if isinstance(claim["dataset"], list) else (
            claim["dataset"])
    groups = [{}]
    for c in by:
        wanted = filters.get(c, claim.get(c))  # e.g. by dataset: the claim's datasets
        groups = [{**g, c: level} for g in groups for level in _levels(c, wanted, measure)]
    rows = []
    for reference in ([False, True] if "relative_to" in measure else [False]):
        fixed = {**base, **(measure["relative_to"] if reference else {})}
        for group in groups:
            for seed in range(SEEDS):
                row = {**fixed, **group, "seed": seed}
                if measure["agg"] == "loglog_slope":
                    x = float(group[by[0]])
                    row[metric], row[column] = x ** value, x ** trivial_value
                else:
                    row[metric] = 1.0 if reference else value
                    row[column] = 1.0 if reference else trivial_value
                rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("paper", PAPERS)
def test_the_trivial_output_fails_every_informative_reproduction_claim(paper):
    """Per claim measured from the runs: with the method reproducing it and the trivial
    baseline failing it, the claim is reproduced; with the method's output replaced by the
    trivial baseline's (the metric column set to its trivial column), it fails; and with a
    trivial baseline that meets it too, it is uninformative unless it declares ``trivial:
    none`` with a reason. A claim that skipped the trivial comparison (a column it does not
    read, a path without it) would stay reproduced there."""
    checked = 0
    for claim in filter(_from_runs, _claims(paper)):
        good, bad = _targets(claim)
        runs = _synthetic_runs(claim, good, bad)
        (row,) = claims_table([claim], runs).to_dict(orient="records")
        assert row["verdict"] == REPRODUCED, (claim["id"], row["verdict"], row["note"])
        metric = claim["measure"]["metric"]
        trivial = claim.get("trivial")
        column = trivial["metric"] if isinstance(trivial, dict) else f"trivial_{metric}"
        replaced = runs.assign(**{metric: runs[column]})
        (row,) = claims_table([claim], replaced).to_dict(orient="records")
        if trivial == "none":
            assert row["trivial_note"].startswith("none: "), claim["id"]
            assert row["verdict"] == NOT_REPRODUCED, claim["id"]
        else:
            assert row["verdict"] in (NOT_REPRODUCED, UNINFORMATIVE), claim["id"]
            # the trivial baseline meeting the claim as well makes it uninformative
            trivially_met = claims_table([claim], runs.assign(**{column: runs[metric]}))
            assert trivially_met["verdict"].iloc[0] == UNINFORMATIVE, claim["id"]
        checked += 1
    assert checked >= {"racodp": 5, "dpfermi": 1, "bilevel": 20, "byoa": 15, "dpdro": 60}[paper]
