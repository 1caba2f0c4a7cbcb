"""YAML-declared tabular datasets: the generic loader, pinning, stand-ins, per-dataset
fingerprints and ``dpminimax data hash``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dpminimax.data import ChecksumMismatchError, DatasetNotFoundError, load_dataset
from dpminimax.data.checksum import file_digest
from dpminimax.data.declared import DeclarationError
from dpminimax.data.registry import get_dataset_spec, list_datasets, write_canonical_sample
from dpminimax.provenance import code_fingerprint, dataset_code_fingerprint, training_data_parts

CSV = """id,age,colour,score,outcome,group
1,30,red,1.5,yes,a
2,17,blue,2.5,no,b
3,45,red,NA,yes,a
4,52,green,0.5,no,c
5,61,blue,3.5,yes,b
6,38,red,4.5,no,a
7,29,green,5.5,yes,b
8,70,blue,6.5,no,a
"""

DECL = """name: toy-{name}
citation: test
licence: test
files:
  - filename: toy.csv
    url: https://example.invalid/toy.csv
    sha256: {sha}
format: {{delimiter: ",", header: true, na_values: [NA], columns: [age, colour, score, outcome,
         group]}}
label: {{column: outcome, positive: [yes], names: [no, yes]}}
sensitive: {{column: group, groups: {{a: A, b: B}}, names: [A, B]}}
filters:
  - {{column: group, in: [a, b]}}
  - {{column: age, min: 18}}
numeric: [age, score]
categorical: [colour]
sample:
  age: {{low: 18, high: 90}}
  colour: [red, blue, green]
  score: {{low: 0, high: 9}}
  outcome: [yes, no]
  group: [a, b]
"""


@pytest.fixture
def declared(tmp_path, monkeypatch):
    """A user declaration directory, a raw directory, and a function writing a declaration."""
    decls, raw = tmp_path / "decls", tmp_path / "raw"
    decls.mkdir()
    (raw / "toy-x").mkdir(parents=True)
    (raw / "toy-x" / "toy.csv").write_text(CSV)
    monkeypatch.setenv("DPMINIMAX_DATASETS", str(decls))
    monkeypatch.setenv("DPMINIMAX_DATA_RAW", str(raw))
    monkeypatch.setenv("DPMINIMAX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DPMINIMAX_DATA", "")
    monkeypatch.setenv("DPMINIMAX_OFFLINE", "1")

    def write(name="x", sha=None, text=DECL):
        sha = sha or file_digest(raw / "toy-x" / "toy.csv")
        path = decls / f"{name}.yaml"
        path.write_text(text.format(name=name, sha=sha))
        return path

    return write


def test_loader_applies_rules_filters_and_encoding(declared):
    declared()
    assert "toy-x" in list_datasets()
    ds = load_dataset("toy-x", test_fraction=0.4)
    # kept: rows 1, 2?(age 17: no), 5, 6, 7, 8; row 3 has NA score; row 4 group c
    assert ds.meta["split"]["n_rows_total"] == 5
    assert ds.feature_names == ["age", "score", "colour=blue", "colour=green", "colour=red"]
    assert ds.group_names == ["A", "B"] and ds.label_names == ["no", "yes"]
    y = np.concatenate([ds.y_train, ds.y_test])
    s = np.concatenate([ds.s_train, ds.s_test])
    x = np.concatenate([ds.x_train, ds.x_test])
    assert sorted(zip(x[:, 2:].argmax(1).tolist(), y.tolist(), s.tolist(), strict=True)) == sorted(
        [(2, 1, 0), (0, 1, 1), (2, 0, 0), (1, 1, 1), (0, 0, 0)])
    assert np.allclose(ds.x_train[:, :2].mean(0), 0, atol=1e-6)  # z-scored, train statistics
    assert ds.meta["source_files"][0]["verified_by"] == "sha256"


def test_threshold_rules_and_whitespace_format(declared, tmp_path):
    text = (DECL.replace('delimiter: ","', "delimiter: whitespace")
            .replace("header: true", "header: false")
            .replace("{{column: outcome, positive: [yes], names: [no, yes]}}",
                     "{{column: score, threshold: 3, names: [low, high]}}")
            .replace("{{column: group, groups: {{a: A, b: B}}, names: [A, B]}}",
                     "{{column: age, threshold: 50, names: [young, old]}}")
            .replace("{{column: group, in: [a, b]}}", "{{column: colour, not_in: [green]}}"))
    raw = tmp_path / "raw" / "toy-x" / "toy.csv"
    raw.write_text("30 red 1 yes a\n60 blue 4 no b\n40 red 5 yes a\n70 green 9 no b\n")
    declared(sha=file_digest(raw), text=text)
    ds = load_dataset("toy-x", test_fraction=0.34)
    assert ds.group_names == ["young", "old"] and ds.label_names == ["low", "high"]
    assert ds.feature_names == ["age", "score", "colour=blue", "colour=red"]
    y = np.concatenate([ds.y_train, ds.y_test])
    s = np.concatenate([ds.s_train, ds.s_test])
    score = np.concatenate([ds.x_train, ds.x_test])[:, 1]
    lowest_score = sorted(zip(score.tolist(), y.tolist(), s.tolist(), strict=True))[0]
    assert lowest_score[1:] == (0, 0)  # age 30, score 1
    assert sorted(zip(y.tolist(), s.tolist(), strict=True)) == [(0, 0), (1, 0), (1, 1)]


def test_unmapped_group_is_an_error(declared):
    declared(text=DECL.replace("  - {{column: group, in: [a, b]}}\n", ""))
    with pytest.raises(ValueError, match="values without a group"):
        load_dataset("toy-x")


def test_unpinned_file_is_refused(declared):
    declared(text=DECL.replace("sha256: {sha}", "sha256: null"))
    with pytest.raises(ChecksumMismatchError, match="not pinned.*dpminimax data hash"):
        load_dataset("toy-x", missing_data="standin")


def test_missing_file_fails_or_gets_a_standin_in_the_declared_format(declared, tmp_path):
    declared(name="y")
    with pytest.raises(DatasetNotFoundError, match="https://example.invalid/toy.csv"):
        load_dataset("toy-y")
    ds = load_dataset("toy-y", missing_data="standin")
    assert ds.meta["standin"] is True and ds.group_names == ["A", "B"]
    (written,) = write_canonical_sample("toy-y", tmp_path / "sample", n_rows=3)
    assert written.read_text().splitlines()[0] == "age,colour,score,outcome,group"


def test_shipped_declarations_write_their_format(tmp_path):
    (german,) = write_canonical_sample("german-credit", tmp_path, n_rows=4)
    rows = german.read_text().splitlines()
    assert len(rows) == 4 and all(len(row.split(" ")) == 21 for row in rows)
    assert get_dataset_spec("german-credit").files[0].sha256 is None  # not pinned here
    assert get_dataset_spec("compas").files[0].url.endswith("compas-scores-two-years.csv")


def test_built_in_names_cannot_be_declared(declared):
    declared(text=DECL.replace("name: toy-{name}", "name: adult"))
    with pytest.raises(DeclarationError, match="built-in"):
        list_datasets()


def test_adding_a_declared_dataset_reruns_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setenv("DPMINIMAX_DATASETS", str(tmp_path))
    names = ["adult", "credit-card", "german-credit", "compas", "synthetic-fair"]
    before = {name: dataset_code_fingerprint(name, "atomic.py") for name in names}
    train_before = code_fingerprint("algorithms", *training_data_parts())
    (tmp_path / "new.yaml").write_text(DECL.format(name="new", sha="0" * 64))
    assert "toy-new" in list_datasets()
    assert {name: dataset_code_fingerprint(name, "atomic.py") for name in names} == before
    assert code_fingerprint("algorithms", *training_data_parts()) == train_before
    first = dataset_code_fingerprint("toy-new", "atomic.py")
    (tmp_path / "new.yaml").write_text(DECL.format(name="new", sha="1" * 64))
    assert dataset_code_fingerprint("toy-new", "atomic.py") != first  # its YAML is covered


def test_own_modules_are_not_shared():
    from dpminimax.provenance import dataset_code_parts

    own, shared = dataset_code_parts()
    assert own["adult"] == {"data/adult.py"}
    assert own["retired-adult"] == {"data/adult.py", "data/retired_adult.py"}
    assert own["german-credit"] == {"data/declared.py"}
    assert "data/adult.py" not in shared and "data/tabular.py" in shared
    assert "data/registry.py" not in training_data_parts()


def test_cli_data_hash(tmp_path):
    path = tmp_path / "f.data"
    path.write_bytes(b"1 2 3\n")
    out = subprocess.run([sys.executable, "-m", "dpminimax.cli", "data", "hash", str(path)],
                         capture_output=True, text=True, check=True).stdout
    assert f"sha256: {file_digest(path)}" in out and "size: 6" in out
