"""CelebA on a canonical-format sample (six files, tiny JPEGs).

The sample's md5s replace the pinned ones in the registry; everything else is the production
path. One test compares our reader with ``torchvision.datasets.CelebA`` on the same directory
(there torchvision's own pinned md5s are replaced too, since that class checks them itself).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from celebasample import attributes, pinned_sample

from dpminimax.data import (
    DatasetNotFoundError,
    celeba,
    get_dataset_spec,
    load_dataset,
    load_prepared,
    save_prepared,
    write_canonical_sample,
)
from dpminimax.data.checksum import file_digest

N_IMAGES = 12


@pytest.fixture
def sample(tmp_path, monkeypatch):
    """A 12-image sample on DPMINIMAX_DATA, pinned by its md5s; returns its directory."""
    return pinned_sample(tmp_path, monkeypatch, ("celeba-smiling", "celeba"), N_IMAGES, seed=0)


def test_sample_has_the_files_torchvision_checks(sample):
    assert [f.filename for f in celeba.FILES] == [n for _, _, n in celeba.FILE_LIST]
    from torchvision.datasets import CelebA

    assert {n for _, _, n in CelebA.file_list} == {p.name for p in sample.iterdir()}
    with zipfile.ZipFile(sample / "img_align_celeba.zip") as archive:
        assert archive.namelist()[0] == "img_align_celeba/000001.jpg"
    assert (sample / "list_attr_celeba.txt").read_text().splitlines()[:2] == [
        str(N_IMAGES), " ".join(celeba.ATTRIBUTES)]


def test_attribute_selection_and_official_splits(sample):
    attr, partition = attributes(sample)
    male, smiling = celeba.ATTRIBUTES.index("Male"), celeba.ATTRIBUTES.index("Smiling")
    ds = load_dataset("celeba")
    assert ds.kind == "image-files" and ds.feature_names == ["image_id"]
    assert (ds.label_names, ds.group_names) == (["not Male", "Male"], ["not Smiling", "Smiling"])
    for part, code in (("train", 0), ("test", 2)):
        ids = getattr(ds, f"x_{part}")[:, 0].astype(int)
        assert ids.tolist() == sorted(i for i, p in partition.items() if p == code)
        assert getattr(ds, f"y_{part}").tolist() == [int(attr[i][male] == 1) for i in ids]
        assert getattr(ds, f"s_{part}").tolist() == [int(attr[i][smiling] == 1) for i in ids]
    assert ds.meta["valid"]["image_ids"] == sorted(i for i, p in partition.items() if p == 1)
    assert ds.meta["n_train"] + ds.meta["n_test"] + len(ds.meta["valid"]["y"]) == N_IMAGES
    assert ds.meta["source_files"][0]["verified_by"].startswith("md5")
    swapped = load_dataset("celeba-smiling")
    np.testing.assert_array_equal(swapped.y_train, ds.s_train)
    np.testing.assert_array_equal(swapped.s_train, ds.y_train)
    assert load_dataset("celeba", max_rows=2).meta["n_train"] == 2
    with pytest.raises(ValueError, match="unknown CelebA attribute 'Beard'"):
        celeba.load_celeba({f.filename: sample / f.filename for f in celeba.FILES}, label="Beard")


def test_lazy_images_are_resized_to_128_in_unit_range(sample, tmp_path):
    ds = load_prepared(save_prepared(load_dataset("celeba"), tmp_path / "prepared"))
    images = celeba.CelebAImages.from_prepared(ds, "train")
    assert len(images) == ds.meta["n_train"]
    image = images[0]
    assert image.shape == (3, 128, 128) and image.dtype == torch.float32
    assert 0.0 <= image.min() < image.max() <= 1.0
    valid = celeba.CelebAImages.from_prepared(ds, "valid")
    assert len(valid) == len(ds.meta["valid"]["image_ids"])
    batch = next(iter(torch.utils.data.DataLoader(images, batch_size=3)))
    assert batch.shape == (3, 3, 128, 128)


def test_reader_agrees_with_torchvision_celeba(sample, monkeypatch):
    from torchvision.datasets import CelebA

    md5 = {f.filename: file_digest(sample / f.filename, "md5") for f in celeba.FILES}
    monkeypatch.setattr(CelebA, "file_list", [(i, md5[name], name) for i, _, name in
                                              CelebA.file_list])
    index = celeba.load_celeba({f.filename: sample / f.filename for f in celeba.FILES},
                               label="Young", sensitive="Male")
    for part, (ids, y, s) in index.splits.items():
        reference = CelebA(str(index.root), split=part, target_type="attr",
                           transform=celeba.image_transform(), download=False)
        assert ids.tolist() == [int(name[:6]) for name in reference.filename]
        np.testing.assert_array_equal(y, reference.attr[:, reference.attr_names.index("Young")])
        np.testing.assert_array_equal(s, reference.attr[:, reference.attr_names.index("Male")])
        ours = celeba.CelebAImages(index.root, ids)
        for row in range(len(ids)):
            torch.testing.assert_close(ours[row], reference[row][0], rtol=0, atol=0)


def test_a_standin_is_read_without_pinned_md5s(tmp_path, monkeypatch):
    from dpminimax.data.standin import standin_sources

    monkeypatch.setenv("DPMINIMAX_CACHE", str(tmp_path / "cache"))
    sources = standin_sources(get_dataset_spec("celeba"), tmp_path / "standin", rows=9)
    index = celeba.load_celeba({s.filename: s.path for s in sources})
    ids = index.splits["train"][0]
    assert celeba.CelebAImages(index.root, ids)[0].shape == (3, 128, 128)


def test_missing_image_names_the_fix(sample, tmp_path):
    ds = load_prepared(save_prepared(load_dataset("celeba"), tmp_path / "prepared"))
    root = ds.meta["images"]["torchvision_root"]
    (Path(root) / "celeba" / "img_align_celeba" / "000001.jpg").unlink()
    with pytest.raises(FileNotFoundError, match=r"000001\.jpg is missing; delete .*sources\.json"):
        celeba.CelebAImages(root, [1, 2])


def test_unpacked_cache_is_reused_and_other_sources_get_their_own(sample, tmp_path):
    """The same sources reuse their directory; other sources (another stand-in) unpack into
    their own and leave the first one's images in place, for a training job still reading
    them (the default run prepares celeba and celeba-blond concurrently)."""
    paths = {f.filename: sample / f.filename for f in celeba.FILES}
    root = celeba.torchvision_root(paths)
    marker = root / "celeba" / "img_align_celeba" / "000001.jpg"
    mtime = marker.stat().st_mtime_ns
    assert celeba.torchvision_root(paths) == root and marker.stat().st_mtime_ns == mtime
    write_canonical_sample("celeba", tmp_path / "other", 3, seed=1)
    paths["list_attr_celeba.txt"] = tmp_path / "other" / "list_attr_celeba.txt"
    other = celeba.torchvision_root(paths)
    assert other != root and marker.stat().st_mtime_ns == mtime
    assert (other / "celeba" / "list_attr_celeba.txt").read_text().startswith("3\n")
    assert not list(root.parent.glob("*/celeba.partial*"))


def test_a_concurrent_build_of_the_same_sources_keeps_the_first(sample, monkeypatch):
    """Two processes unpacking the same sources: the one renaming second drops its copy."""
    paths = {f.filename: sample / f.filename for f in celeba.FILES}
    root = celeba.torchvision_root(paths)
    stamp = root / "celeba" / celeba.SOURCES_STAMP
    text = stamp.read_text()
    stamp.unlink()  # as if this process checked before the other finished
    monkeypatch.setattr(celeba.os, "getpid", lambda: 424242)
    original = Path.rename

    def rename(self, target):
        stamp.write_text(text)  # the other process's directory is in place first
        return original(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    assert celeba.torchvision_root(paths) == root
    assert (root / "celeba" / "img_align_celeba" / "000001.jpg").is_file()
    assert not (root / "celeba.partial.424242").exists()


def test_missing_files_name_the_manual_download(tmp_path, monkeypatch):
    monkeypatch.setenv("DPMINIMAX_DATA_RAW", str(tmp_path / "raw"))
    monkeypatch.setenv("DPMINIMAX_DATA", str(tmp_path / "shared"))
    monkeypatch.setenv("DPMINIMAX_OFFLINE", "1")
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("celeba")
    message = str(info.value)
    for expected in ("img_align_celeba.zip", "list_eval_partition.txt", "drive.google.com",
                     "download=True", celeba.PAGE, str(tmp_path / "raw" / "celeba"),
                     str(tmp_path / "shared")):
        assert expected in message
