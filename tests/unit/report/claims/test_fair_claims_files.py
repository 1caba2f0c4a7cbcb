"""The RaCO-DP and DP-FERMI claims files: every claim annotated with the interface's keys
(kind, interval, trivial) and every measure well-formed, so none is left "qualitative"."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpminimax.report.claims.reference import load_claims
from dpminimax.report.compare.dominance import AGGREGATES, STATISTICS, TRIVIAL

ROOT = Path(__file__).resolve().parents[4]
KINDS = {"reproduction", "consistency", "diagnostic"}
INTERVALS = {"bootstrap", "t", "exact"}


@pytest.mark.parametrize("paper", ["racodp", "dpfermi"])
def test_every_claim_is_annotated(paper):
    for claim in load_claims(ROOT / "papers" / paper / "claims.yaml"):
        name = claim["id"]
        assert claim.get("kind") in KINDS, name
        assert claim.get("interval") in INTERVALS, name
        assert claim["comparison"] != "qualitative", name
        trivial = claim.get("trivial")
        if trivial == "none":
            assert str(claim.get("trivial_reason", "")).strip(), name
        elif trivial == "measured":
            assert "dominance" in claim["measure"], name
        else:
            assert trivial is None or set(trivial) == {"metric"}, name
        if "not_run" in claim:
            assert str(claim["not_run"]).strip() and "agg" not in claim["measure"], name


@pytest.mark.parametrize("paper", ["racodp", "dpfermi"])
def test_dominance_blocks_are_well_formed(paper):
    blocks = [c for c in load_claims(ROOT / "papers" / paper / "claims.yaml")
              if "dominance" in c["measure"]]
    assert blocks
    for claim in blocks:
        spec = claim["measure"]["dominance"]
        assert claim["measure"]["metric"] in STATISTICS, claim["id"]
        assert spec["over"] in AGGREGATES and spec["violation"] in {"dp_violation",
                                                                     "eo_violation"}
        assert spec["against"] and spec["method"] not in spec["against"]
        assert claim["kind"] == "reproduction" and claim["trivial"] == "measured"
        assert claim["interval"] == "bootstrap"
        against_trivial = spec["against"] == [TRIVIAL]
        assert claim["comparison"] == ("below" if against_trivial else "at_least")
