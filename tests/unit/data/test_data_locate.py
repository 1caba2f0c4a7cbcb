"""Search path, download fallback and checksum verification (no network: downloads are faked)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from dpminimax.data import ChecksumMismatchError, DatasetNotFoundError, locate
from dpminimax.data.checksum import clear_digest_cache, file_digest
from dpminimax.data.schema import CanonicalFile

CONTENT = b"canonical bytes\n"
SHA = hashlib.sha256(CONTENT).hexdigest()
URL = "https://example.invalid/toy/toy.csv"
TOY = CanonicalFile("toy.csv", URL, SHA)


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """An isolated search path: cwd/data/raw, then two DPMINIMAX_DATA directories."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DPMINIMAX_DATA_RAW", raising=False)
    extra = [tmp_path / "shared1", tmp_path / "shared2"]
    monkeypatch.setenv("DPMINIMAX_DATA", ":".join(map(str, extra)))
    return {"raw": tmp_path / "data" / "raw", "shared1": extra[0], "shared2": extra[1]}


@pytest.fixture
def no_network(monkeypatch):
    """Make every download fail at once; return the list of attempted URLs."""
    attempts = []

    def fail(url, dest):
        attempts.append(url)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(locate, "download", fail)
    return attempts


def put(path: Path, content: bytes = CONTENT) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def test_search_order_prefers_project_raw_dir(dirs, no_network):
    put(dirs["shared1"] / "toy" / "toy.csv")
    put(dirs["raw"] / "toy" / "toy.csv")
    [found] = locate.obtain("toy", [TOY])
    assert found.path == dirs["raw"] / "toy" / "toy.csv"
    assert found.verified_by == "sha256" and found.sha256 == SHA
    assert no_network == []


def test_dataset_folder_then_flat_file_then_later_directories(dirs, no_network):
    put(dirs["shared2"] / "toy" / "toy.csv")
    put(dirs["shared1"] / "toy.csv")
    assert locate.obtain("toy", [TOY])[0].path == dirs["shared1"] / "toy.csv"
    put(dirs["shared1"] / "toy" / "toy.csv")
    assert locate.obtain("toy", [TOY])[0].path == dirs["shared1"] / "toy" / "toy.csv"


def test_data_raw_env_overrides_project_raw_dir(dirs, tmp_path, monkeypatch, no_network):
    put(dirs["raw"] / "toy" / "toy.csv", b"ignored")
    put(tmp_path / "elsewhere" / "toy" / "toy.csv")
    monkeypatch.setenv("DPMINIMAX_DATA_RAW", str(tmp_path / "elsewhere"))
    assert locate.search_dirs()[0] == tmp_path / "elsewhere"
    assert locate.obtain("toy", [TOY])[0].path == tmp_path / "elsewhere" / "toy" / "toy.csv"


def test_missing_file_raises_one_clear_error(dirs, no_network):
    other = CanonicalFile("other.csv", "https://example.invalid/other.csv", SHA)
    with pytest.raises(DatasetNotFoundError) as info:
        locate.obtain("toy", [TOY, other])
    message = str(info.value)
    for expected in ("toy.csv", URL, "other.csv", "network disabled", "DPMINIMAX_DATA",
                     str(dirs["raw"] / "toy"), str(dirs["shared1"]), str(dirs["shared2"])):
        assert expected in message
    assert no_network == [URL]  # the second file is not tried once the host failed


def test_offline_env_skips_the_network(dirs, monkeypatch):
    monkeypatch.setenv("DPMINIMAX_OFFLINE", "1")
    with pytest.raises(DatasetNotFoundError, match="DPMINIMAX_OFFLINE"):
        locate.obtain("toy", [TOY])


def test_checksum_mismatch_is_never_accepted(dirs, no_network):
    path = put(dirs["shared1"] / "toy" / "toy.csv", b"tampered\n")
    with pytest.raises(ChecksumMismatchError) as info:
        locate.obtain("toy", [TOY])
    message = str(info.value)
    assert "toy.csv" in message and SHA in message
    assert hashlib.sha256(b"tampered\n").hexdigest() in message
    assert path.read_bytes() == b"tampered\n"


def test_md5_pin_accepts_the_canonical_host_file(dirs, no_network):
    put(dirs["raw"] / "toy" / "toy.csv", b"re-encoded\n")
    file = CanonicalFile("toy.csv", URL, SHA, md5=hashlib.md5(b"re-encoded\n").hexdigest())
    assert locate.obtain("toy", [file])[0].verified_by.startswith("md5")


def test_download_lands_atomically_in_raw_dir(dirs, monkeypatch):
    monkeypatch.setattr(locate, "download", lambda url, dest: dest.write_bytes(CONTENT))
    [found] = locate.obtain("toy", [TOY])
    assert found.path == dirs["raw"] / "toy" / "toy.csv"
    assert sorted(p.name for p in found.path.parent.iterdir()) == ["toy.csv"]


def test_download_with_wrong_bytes_leaves_nothing(dirs, monkeypatch):
    monkeypatch.setattr(locate, "download", lambda url, dest: dest.write_bytes(b"evil"))
    with pytest.raises(ChecksumMismatchError):
        locate.obtain("toy", [TOY])
    assert list((dirs["raw"] / "toy").iterdir()) == []


def test_converted_file_is_accepted_by_its_content_check_on_every_locate(dirs):
    checked = []
    file = CanonicalFile("toy.csv", URL, SHA, fetch=lambda dest: dest.write_bytes(b"converted\n"),
                         content_check=checked.append)
    [found] = locate.obtain("toy", [file])
    assert len(checked) == 1 and found.verified_by.startswith("content")
    assert sorted(p.name for p in found.path.parent.iterdir()) == ["toy.csv"]
    assert locate.obtain("toy", [file])[0].verified_by.startswith("content")
    assert len(checked) == 2  # checked again: nothing remembered beside the file


@pytest.mark.parametrize("sha256", [SHA, None], ids=["pinned", "unpinned"])
def test_a_stamp_beside_a_file_never_vouches_for_it(dirs, no_network, sha256):
    """Issue 40 item 1: c7eb000 accepted any bytes with a ``<file>.content-verified.json``
    holding their sha256 beside them, without running the content check."""
    def reject(path):
        raise ChecksumMismatchError(f"{path}: bad content")

    path = put(dirs["shared1"] / "toy" / "toy.csv", b"edited bytes\n")
    path.with_name("toy.csv.content-verified.json").write_text(
        json.dumps({"sha256": hashlib.sha256(b"edited bytes\n").hexdigest()}))
    with pytest.raises(ChecksumMismatchError, match="bad content"):
        locate.obtain("toy", [CanonicalFile("toy.csv", URL, sha256, content_check=reject)])


def test_failed_content_check_leaves_nothing(dirs):
    def reject(path):
        raise ChecksumMismatchError("bad content")

    file = CanonicalFile("toy.csv", URL, SHA, fetch=lambda dest: dest.write_bytes(b"x"),
                         content_check=reject)
    with pytest.raises(ChecksumMismatchError, match="bad content"):
        locate.obtain("toy", [file])
    assert list((dirs["raw"] / "toy").iterdir()) == []


def test_digest_is_cached_by_path_size_and_mtime(tmp_path, monkeypatch):
    path = put(tmp_path / "f.bin")
    clear_digest_cache()
    calls = []
    real_new = hashlib.new
    monkeypatch.setattr(hashlib, "new", lambda name: calls.append(name) or real_new(name))
    assert file_digest(path) == file_digest(path) == SHA
    assert calls == ["sha256"]
    put(path, b"changed, longer content\n")
    assert file_digest(path) == hashlib.sha256(b"changed, longer content\n").hexdigest()
    assert calls == ["sha256", "sha256"]
