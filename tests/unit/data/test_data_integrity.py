"""Data integrity through ``dpminimax data prepare``: nothing written beside a file vouches for
its bytes, and every data error is one line and exit status 2 (issue 40, items 1-3).

The real-data cases copy the files of ``$DPMINIMAX_DATA`` into a private search path (skipped
when they are absent); the others write small files in the canonical format.
"""

from __future__ import annotations

import json
import shutil

import pytest
from realdata import real

from dpminimax.cli import main
from dpminimax.data import credit_card, get_dataset_spec, write_canonical_sample
from dpminimax.data.locate import candidate_paths

FORGED_STAMP = ".content-verified.json"  # the stamp c7eb000 trusted beside a converted file


def _real_file(dataset: str, filename: str):
    return next(p for p in candidate_paths(dataset, filename) if p.is_file())


def _prepare_fails(capsys, name, tmp_path) -> str:
    """Run ``data prepare NAME``; assert one line on stderr and exit 2; return that line."""
    with pytest.raises(SystemExit) as exit_info:
        main(["data", "prepare", name, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out" / "meta.json").exists()
    return err


def _isolate(monkeypatch, tmp_path):
    """An offline search path ``<tmp>/raw`` then ``<tmp>/shared`` (copies of real files are
    taken before this is called)."""
    for var, value in {"DPMINIMAX_DATA_RAW": tmp_path / "raw",
                       "DPMINIMAX_DATA": tmp_path / "shared",
                       "DPMINIMAX_CACHE": tmp_path / "cache", "DPMINIMAX_OFFLINE": "1"}.items():
        monkeypatch.setenv(var, str(value))


def _forge(path) -> None:
    """The issue's attack: a stamp beside ``path`` holding its current sha256."""
    import hashlib

    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_name(path.name + FORGED_STAMP).write_text(json.dumps({"sha256": digest}))


@real("credit-card")
def test_forged_stamp_does_not_pass_modified_credit_card_data(capsys, tmp_path, monkeypatch):
    """Issue 40 item 1 verbatim: LIMIT_BAL's first digit changed in rows 10-59 (49 bytes that
    keep the row and default counts), a stamp with the new sha256 beside the copy."""
    source = _real_file("credit-card", credit_card.CSV_NAME)
    _isolate(monkeypatch, tmp_path)
    copy = tmp_path / "shared" / "credit-card" / credit_card.CSV_NAME
    copy.parent.mkdir(parents=True)
    lines = source.read_text().splitlines(keepends=True)
    changed = 0
    for row in range(10, 60):  # data rows 10..59 (line 0 is the header)
        fields = lines[row].split(",")
        digit = "2" if fields[1][0] != "2" else "3"
        changed += fields[1][0] != digit
        fields[1] = digit + fields[1][1:]
        lines[row] = ",".join(fields)
    copy.write_text("".join(lines))
    assert changed >= 49
    _forge(copy)
    err = _prepare_fails(capsys, "credit-card", tmp_path)
    assert "content differs from the canonical table" in err and "30000 rows" in err


@real("credit-card")
def test_reformatted_credit_card_with_the_same_content_is_accepted(capsys, tmp_path,
                                                                   monkeypatch):
    """The content check is what a converted spreadsheet is accepted by: other bytes (CRLF line
    ends, as another converter may write) with the pinned table pass, and say so."""
    source = _real_file("credit-card", credit_card.CSV_NAME)
    _isolate(monkeypatch, tmp_path)
    copy = tmp_path / "raw" / "credit-card" / credit_card.CSV_NAME
    copy.parent.mkdir(parents=True)
    copy.write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))
    assert main(["data", "prepare", "credit-card", "--out", str(tmp_path / "out")]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["source_files"][0]["verified_by"].startswith("content")
    assert meta["n_train"] + meta["n_test"] == 30_000


def test_credit_content_check_pins_every_value(tmp_path, monkeypatch):
    """Without the real file: a sample's table pinned as the canonical one; one changed value
    (same rows, same defaults) is refused even with a forged stamp beside it."""
    [path] = write_canonical_sample("credit-card", tmp_path, n_rows=30, seed=0)
    monkeypatch.setattr(credit_card, "CONTENT_SHA256",
                        credit_card.content_digest(credit_card.read_credit_csv(path)))
    credit_card.check_credit_content(path)
    frame = credit_card.read_credit_csv(path)
    frame.loc[3, "LIMIT_BAL"] += 10_000
    frame.to_csv(path, index=False)
    _forge(path)
    with pytest.raises(credit_card.ChecksumMismatchError, match="content sha256"):
        credit_card.check_credit_content(path)


@real("adult")
@pytest.mark.parametrize("case", ["flipped byte in adult.data", "truncated adult.test",
                                  "bad copy earlier on the search path"])
def test_bad_adult_files_are_one_line_and_exit_2(capsys, tmp_path, monkeypatch, case):
    sources = {f.filename: _real_file("adult", f.filename) for f in get_dataset_spec("adult").files}
    _isolate(monkeypatch, tmp_path)
    shared = tmp_path / "shared" / "adult"
    shared.mkdir(parents=True)
    for name, path in sources.items():
        shutil.copyfile(path, shared / name)
    if case == "flipped byte in adult.data":
        bad = shared / "adult.data"
        data = bytearray(bad.read_bytes())
        data[1000] ^= 0x01
        bad.write_bytes(bytes(data))
    elif case == "truncated adult.test":
        bad = shared / "adult.test"
        bad.write_bytes(bad.read_bytes()[:-5000])
    else:  # the good copies stay in shared/; a truncated one comes first
        bad = tmp_path / "raw" / "adult" / "adult.data"
        bad.parent.mkdir(parents=True)
        bad.write_bytes((shared / "adult.data").read_bytes()[:100_000])
    err = _prepare_fails(capsys, "adult", tmp_path)
    assert f"{bad}: checksum mismatch for {bad.name!r}" in err


@pytest.mark.parametrize("name", ["german-credit", "compas"])
def test_unpinned_declared_file_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch, name):
    _isolate(monkeypatch, tmp_path)
    write_canonical_sample(name, tmp_path / "raw" / name, n_rows=40, seed=0)
    err = _prepare_fails(capsys, name, tmp_path)
    assert "not pinned" in err and "dpminimax data hash" in err


@pytest.mark.parametrize("max_rows, says", [
    (1, "max_rows=1: 1 training and 0 test row(s)"),
    (2, "max_rows=2: 2 training and 0 test row(s)"),
])
def test_splits_that_cannot_train_or_evaluate_are_refused(capsys, tmp_path, monkeypatch,
                                                          max_rows, says):
    _isolate(monkeypatch, tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["data", "prepare", "synthetic-fair", "--out", str(tmp_path / "out"),
              "--max-rows", str(max_rows)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and says in err and "raise max_rows" in err
    assert main(["data", "prepare", "synthetic-fair", "--out", str(tmp_path / "out"),
                 "--max-rows", "20"]) == 0
