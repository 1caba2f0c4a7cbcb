"""Dataset facts of the claims read from the prepared data's meta.json (report.dataset_facts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpminimax.report.claims.reference import load_claims
from dpminimax.report.dataset_facts import dataset_facts, measured_facts, read_dataset_facts

ROOT = Path(__file__).resolve().parents[3]


def _record(name="adult", features=102, max_rows=None, standin=False):
    meta = {"split": {"max_rows": max_rows, "n_rows_total": 45222, "scheme": "shuffled"},
            "group_counts": {"train": {"Male": 22841, "Female": 11075},
                             "test": {"Male": 7686, "Female": 3620}}}
    if standin:
        meta.update(standin=True, standin_reason="no files")
    return {"format_version": 1, "name": name, "kind": "tabular",
            "feature_names": [f"f{i}" for i in range(features)],
            "label_names": ["<=50K", ">50K"], "group_names": ["Male", "Female"], "meta": meta}


def test_facts_of_a_meta_record():
    assert dataset_facts(_record()) == {
        "num_features": 102, "num_classes": 2, "num_groups": 2, "num_rows": 45222,
        "group_rows.Male": 30527, "group_rows.Female": 14695}
    subsampled = dataset_facts(_record(max_rows=5000))  # the split's groups are a subsample
    assert subsampled["num_rows"] == 45222 and "group_rows.Male" not in subsampled
    assert dataset_facts(_record(standin=True)) == {}
    canonical = _record()  # images: a canonical split records no n_rows_total
    canonical["meta"] |= {"split": {"scheme": "canonical", "max_rows": None},
                          "n_train": 60000, "n_test": 10000}
    assert dataset_facts(canonical)["num_rows"] == 70000
    canonical["meta"]["split"]["max_rows"] = 1000
    assert "num_rows" not in dataset_facts(canonical)


def test_the_papers_dataset_claims_read_a_fixture_meta_json(tmp_path):
    paths = []
    for name, features in (("adult", 102), ("credit-card", 84)):
        path = tmp_path / name / "meta.json"
        path.parent.mkdir()
        path.write_text(json.dumps(_record(name, features)), encoding="utf-8")
        paths.append(path)
    facts = read_dataset_facts(paths)
    measured = measured_facts(load_claims(ROOT / "papers" / "dpfermi" / "claims.yaml"), facts)
    assert measured == {"adult_features": 102.0, "credit_card_features": 84.0,
                        "credit_card_rows": 45222.0}  # adult_rows wants the raw files' rows
    assert "parkinsons_features" not in measured  # no meta.json for it


def test_a_fact_is_measured_only_for_claims_declaring_an_exact_interval():
    claim = {"id": "rows", "dataset": "adult", "measure": {"metric": "num_rows"}}
    facts = {"adult": {"num_rows": 10}}
    assert measured_facts([claim], facts) == {}
    assert measured_facts([{**claim, "interval": "exact"}], facts) == {"rows": pytest.approx(10)}
