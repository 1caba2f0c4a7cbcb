"""Reported baselines (RaCO-DP Figs. 4 and 6) and the paper's claims file."""

import math
import os
from pathlib import Path

import pandas as pd
import pytest

from dpminimax.report.claims.reference import (
    CLAIM_KEYS,
    REPORTED_COLUMNS,
    ReferenceFileError,
    load_claims,
    load_reported,
)

ROOT = Path(__file__).resolve().parents[4]
REPORTED = ROOT / "papers" / "racodp" / "reference" / "reported_baselines.csv"
CLAIMS = ROOT / "papers" / "racodp" / "claims.yaml"
#: The papers' full texts, outside the repository: a directory named by DPMINIMAX_PAPERS (the
#: quotation tests skip without it).
PAPERS = Path(os.environ.get("DPMINIMAX_PAPERS", "/nonexistent"))
PAPER = PAPERS / "000_b56857c7f73849d3.txt"
INF = math.inf

# Rows per (constraint, dataset, epsilon), counted in the decoded figure data.
EXPECTED_ROWS = {
    ("demographic_parity", "adult"): {0.5: 11, 1.0: 12, 3.0: 12, 9.0: 13, INF: 13},
    ("demographic_parity", "credit-card"): {0.5: 11, 1.0: 11, 3.0: 10, 9.0: 11, INF: 10},
    ("demographic_parity", "parkinsons"): {0.5: 9, 1.0: 8, 3.0: 9, 9.0: 9, INF: 8},
    ("demographic_parity", "retired-adult"): {0.5: 13, 1.0: 13, 3.0: 12, 9.0: 11, INF: 11},
    ("equalized_odds", "adult"): {0.5: 16, 1.0: 22, 3.0: 11},
    ("equalized_odds", "credit-card"): {0.5: 9, 1.0: 9, 3.0: 11},
}


@pytest.fixture(scope="module")
def reported():
    return load_reported(REPORTED)


def test_row_counts_match_the_spec(reported):
    counts = reported.groupby(["constraint", "dataset", "epsilon"]).size()
    expected = {(c, d, e): n for (c, d), per_eps in EXPECTED_ROWS.items()
                for e, n in per_eps.items()}
    assert counts.to_dict() == expected
    assert len(reported) == 295
    assert set(reported["method"]) == {"dpfermi", "tran2021a", "tran2021b", "jagielski2019"}
    assert set(reported["source"]) == {
        "DP-FERMI repository (Gupta 2023), as plotted by RaCO-DP Figs. 4 and 6"}


def _row(table, constraint, dataset, eps, method, lam=None, point=None):
    sel = ((table["constraint"] == constraint) & (table["dataset"] == dataset)
           & (table["epsilon"] == eps) & (table["method"] == method))
    if lam is not None:
        sel &= table["fairness_weight"] == lam
    if point is not None:
        sel &= table["point"] == point
    rows = table.loc[sel]
    assert len(rows) == 1
    return rows.iloc[0]


@pytest.mark.parametrize(("key", "values"), [
    # adult, DP, eps 1, DP-FERMI at 0.75: 0.1763, 0.0455, band [0.0376, 0.0534]
    (("demographic_parity", "adult", 1.0, "dpfermi", 0.75), (0.1763, 0.0455, 0.0376, 0.0534)),
    # B.1 credit-card: "| 9 | Tran et al. 2021a (DP-ERM mitigation) | 12 | 0.1991 | 0.0088 |
    # [0.0087, 0.0089] |"
    (("demographic_parity", "credit-card", 9.0, "tran2021a", 12.0),
     (0.1991, 0.0088, 0.0087, 0.0089)),
    # B.1 parkinsons: "| inf | DP-FERMI | 1 | 0.0844 | 0.0159 | [0.0120, 0.0198] |"
    (("demographic_parity", "parkinsons", INF, "dpfermi", 1.0), (0.0844, 0.0159, 0.0120, 0.0198)),
    # B.1 retired-adult: "| 3 | Tran et al. 2021a (DP-ERM mitigation) | 45 | 0.2264 | 0.0206 |
    # [0.0181, 0.0227] |"
    (("demographic_parity", "retired-adult", 3.0, "tran2021a", 45.0),
     (0.2264, 0.0206, 0.0181, 0.0227)),
    # B.2 adult: "| 0.5 | DP-FERMI | 0.375 | 0.2342 | 0.0102 | [-0.0059, 0.0263] |"
    (("equalized_odds", "adult", 0.5, "dpfermi", 0.375), (0.2342, 0.0102, -0.0059, 0.0263)),
])
def test_spot_check_values(reported, key, values):
    row = _row(reported, *key)
    got = (row["test_error"], row["violation"], row["violation_lower"], row["violation_upper"])
    assert got == pytest.approx(values, abs=1e-9)


def test_single_points_and_unlabelled_curves(reported):
    # B.2 credit-card: "| 1 | Jagielski et al. 2019 (in-processing) | pt 2 | 0.4262 | 0.0078 |"
    pt = _row(reported, "equalized_odds", "credit-card", 1.0, "jagielski2019", point=2)
    assert (pt["test_error"], pt["violation"]) == pytest.approx((0.4262, 0.0078))
    assert math.isnan(pt["fairness_weight"])
    # B.1 adult: "| 0.5 | Tran et al. 2021b (PF-LD, single point) | – | 0.1879 | 0.0671 | – |"
    single = _row(reported, "demographic_parity", "adult", 0.5, "tran2021b")
    assert (single["test_error"], single["violation"]) == pytest.approx((0.1879, 0.0671))
    assert single[["fairness_weight", "violation_lower", "violation_upper"]].isna().all()
    assert single["method_label"] == "Tran et al. 2021b (PF-LD, single point)"


def test_load_reported_names_file_and_column(tmp_path):
    bad = tmp_path / "bad.csv"
    pd.read_csv(REPORTED).drop(columns=["violation_upper"]).to_csv(bad, index=False)
    with pytest.raises(ReferenceFileError, match=r"bad\.csv.*'violation_upper'"):
        load_reported(bad)
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        load_reported(tmp_path / "nope.csv")
    assert "violation_upper" in REPORTED_COLUMNS


def test_claims_load_with_their_keys():
    claims = load_claims(CLAIMS)
    ids = [c["id"] for c in claims]
    assert len(ids) == len(set(ids)) >= 25
    for claim in claims:
        assert all(key in claim for key in CLAIM_KEYS)
        assert claim["measure"]["metric"]
    by_id = {c["id"]: c for c in claims}
    assert by_id["celeba_racodp_accuracy_eps1"]["value"] == 0.90
    assert by_id["heart_sgda_accuracy"]["value"] == 0.875
    assert by_id["adult_fnr0_min_clip_norm"]["value"] == 12.5
    assert by_id["time_adult_racodp"]["value"] == 0.064


@pytest.mark.skipif(not PAPER.is_file(), reason="paper text not available (set DPMINIMAX_PAPERS)")
def test_every_claim_quotes_the_paper_verbatim():
    paper = " ".join(PAPER.read_text(encoding="utf-8").split())
    for claim in load_claims(CLAIMS):
        quote = " ".join(str(claim["source_quote"]).split())
        assert quote in paper, f"{claim['id']}: quote not in the paper: {quote!r}"


def test_load_claims_names_file_claim_and_key(tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_text("claims:\n  - id: x\n    figure: Fig. 1\n    quantity: q\n    value: 1\n"
                   "    unit: ms\n    tolerance: {kind: absolute, value: 0.1}\n"
                   "    measure: {metric: m, how: h}\n", encoding="utf-8")
    with pytest.raises(ReferenceFileError, match=r"claims\.yaml.*'x'.*'source_quote'"):
        load_claims(bad)
    bad.write_text("not_claims: []\n", encoding="utf-8")
    with pytest.raises(ReferenceFileError, match="claims"):
        load_claims(bad)


# ---------------------------------------------------------------- DP-FERMI (decoded figure data)

DPFERMI_REPORTED = ROOT / "papers" / "dpfermi" / "reference" / "reported_baselines.csv"
DPFERMI_CLAIMS = ROOT / "papers" / "dpfermi" / "claims.yaml"
DPFERMI_PAPER = PAPERS / "001_6435a04e7d0e2967.txt"
DPFERMI_SOURCE = ("DP-FERMI repository (Gupta 2023) Figures/*.pt, the plotted means and bands"
                  " decoded from its stored figure data")
# Points per (constraint, dataset, epsilon), counted in the decoded figure data: the same
# panels as RaCO-DP's Appendix B (EXPECTED_ROWS) plus Fig. 5 (UTK-Face, DP-FERMI only).
DPFERMI_EXPECTED_ROWS = {
    **EXPECTED_ROWS,
    ("demographic_parity", "utkface"): {10.0: 4, 25.0: 5, 50.0: 5, 100.0: 5, 200.0: 5},
}


@pytest.fixture(scope="module")
def dpfermi_reported():
    return load_reported(DPFERMI_REPORTED)


def test_dpfermi_row_counts_match_the_spec(dpfermi_reported):
    counts = dpfermi_reported.groupby(["constraint", "dataset", "epsilon"]).size()
    expected = {(c, d, e): n for (c, d), per_eps in DPFERMI_EXPECTED_ROWS.items()
                for e, n in per_eps.items()}
    assert counts.to_dict() == expected
    assert len(dpfermi_reported) == 319
    assert set(dpfermi_reported["method"]) == {"dpfermi", "tran2021a", "tran2021b",
                                               "jagielski2019"}
    assert set(dpfermi_reported["source"]) == {DPFERMI_SOURCE}
    utk = dpfermi_reported.loc[dpfermi_reported["dataset"] == "utkface"]
    assert set(utk["method"]) == {"dpfermi"}
    assert sorted(utk.loc[utk["epsilon"] == 10.0, "fairness_weight"]) == [0.0, 10.0, 100.0, 500.0]


@pytest.mark.parametrize(("key", "values"), [
    # decoded: adult DP, eps 3: "λ=0.75: (0.1779, 0.0432 [0.0369, 0.0495])"
    (("demographic_parity", "adult", 3.0, "dpfermi", 0.75), (0.1779, 0.0432, 0.0369, 0.0495)),
    # decoded: retired-adult DP, eps inf: "λ=1.5: (0.2061, 0.0186 [0.0165, 0.0208])"
    (("demographic_parity", "retired-adult", INF, "dpfermi", 1.5),
     (0.2061, 0.0186, 0.0165, 0.0208)),
    # decoded: UTK-Face, eps 10: "λ=500: (0.8841, 0.0454 [-0.0050, 0.0962])"
    (("demographic_parity", "utkface", 10.0, "dpfermi", 500.0), (0.8841, 0.0454, -0.0050, 0.0962)),
    # decoded: UTK-Face, eps 200 (appendix only): "λ=2: (0.3020, 0.1800 [0.1588, 0.2013])"
    (("demographic_parity", "utkface", 200.0, "dpfermi", 2.0), (0.3020, 0.1800, 0.1588, 0.2013)),
    # decoded: credit-card EO, eps 3: "λ=1.5: (0.2159, 0.0001 [-0.0000, 0.0002])"
    (("equalized_odds", "credit-card", 3.0, "dpfermi", 1.5), (0.2159, 0.0001, -0.0, 0.0002)),
])
def test_dpfermi_spot_check_values(dpfermi_reported, key, values):
    row = _row(dpfermi_reported, *key)
    got = (row["test_error"], row["violation"], row["violation_lower"], row["violation_upper"])
    assert got == pytest.approx(values, abs=1e-9)


def test_dpfermi_keys_points_and_single_points(dpfermi_reported):
    # adult DP eps 9, Tran 2021a at γ = 300: (0.2011, 0.0650), a single point with no band
    tran_a = _row(dpfermi_reported, "demographic_parity", "adult", 9.0, "tran2021a", lam=300.0)
    assert (tran_a["test_error"], tran_a["violation"]) == pytest.approx((0.2011, 0.0650))
    assert tran_a[["violation_lower", "violation_upper"]].isna().all()
    # decoded: adult EO eps 1: the 16th Jagielski point "(0.2981, 0.0770)" is point 15
    jag = _row(dpfermi_reported, "equalized_odds", "adult", 1.0, "jagielski2019", point=15)
    assert (jag["test_error"], jag["violation"]) == pytest.approx((0.2981, 0.0770))
    # decoded: parkinsons DP eps inf: Tran 2021b "(0.0633, 0.0474)"
    single = _row(dpfermi_reported, "demographic_parity", "parkinsons", INF, "tran2021b")
    assert (single["test_error"], single["violation"]) == pytest.approx((0.0633, 0.0474))
    assert single[["fairness_weight", "point"]].isna().all()


def test_dpfermi_and_racodp_transcriptions_agree(dpfermi_reported, reported):
    """Both reference files are decoded from the same figure data: every RaCO-DP row (error,
    violation; the DP-FERMI bands) is in the DP-FERMI file, which adds only UTK-Face."""
    key = ["constraint", "dataset", "epsilon", "method", "fairness_weight", "point"]
    merged = dpfermi_reported.merge(reported, on=key, how="outer", suffixes=("", "_racodp"),
                                    indicator=True)
    assert set(merged.loc[merged["_merge"] == "left_only", "dataset"]) == {"utkface"}
    assert (merged["_merge"] != "right_only").all()
    both = merged.loc[merged["_merge"] == "both"]
    assert len(both) == 295
    for column in ("test_error", "violation"):
        assert (both[column] == both[f"{column}_racodp"]).all()
    fermi = both.loc[both["method"] == "dpfermi"]
    for column in ("violation_lower", "violation_upper"):
        assert (fermi[column] == fermi[f"{column}_racodp"]).all()


def test_dpfermi_claims_load_with_the_papers_numbers():
    claims = {c["id"]: c for c in load_claims(DPFERMI_CLAIMS)}
    assert len(claims) == 37   # 33 of the paper + the 4 diagnostics splitting the DP gain
    assert sum(c.get("kind") == "diagnostic" for c in claims.values()) == 5
    assert [claims[f"{k}_gain_{s}"]["value"] for k in ("dp", "eo") for s in ("mean", "median")] \
        == [79.648, 65.89, 96.65, 90.02]
    assert {k: claims[f"{k}_features"]["value"] for k in
            ("adult", "retired_adult", "parkinsons", "credit_card")} == {
        "adult": 102, "retired_adult": 102, "parkinsons": 19, "credit_card": 85}
    assert claims["utk_cnn_parameters"]["value"] == 1.6e6
    assert all(c["measure"]["metric"] and c["measure"]["how"] for c in claims.values())


@pytest.mark.skipif(not DPFERMI_PAPER.is_file(),
                    reason="paper text not available (set DPMINIMAX_PAPERS)")
def test_every_dpfermi_claim_quotes_the_paper_verbatim():
    paper = " ".join(DPFERMI_PAPER.read_text(encoding="utf-8").split())
    for claim in load_claims(DPFERMI_CLAIMS):
        quote = " ".join(str(claim["source_quote"]).split())
        assert quote in paper, f"{claim['id']}: quote not in the paper: {quote!r}"
