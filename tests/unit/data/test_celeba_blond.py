"""CelebA Blond_Hair (Sagawa et al. 2019; details the paper omits are ours) on a canonical-
format sample: the Blond_Hair / Male columns, official splits, 178x178 center crop then 32x32."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from celebasample import attributes, pinned_sample
from PIL import Image
from realdata import real

from dpminimax.data import (
    celeba,
    load_dataset,
    load_prepared,
    save_prepared,
)
from dpminimax.data.standin import STANDIN_NOTE

N_IMAGES = 15


@pytest.fixture
def sample(tmp_path, monkeypatch):
    """A 15-image sample on DPMINIMAX_DATA, pinned by its md5s; returns its directory."""
    return pinned_sample(tmp_path, monkeypatch, ("celeba", "celeba-blond"), N_IMAGES, seed=2)


def test_labels_are_the_blond_hair_column_on_the_official_split(sample):
    attr, partition = attributes(sample)
    blond, male = celeba.ATTRIBUTES.index("Blond_Hair"), celeba.ATTRIBUTES.index("Male")
    ds = load_dataset("celeba-blond")
    assert ds.kind == "image-files" and ds.feature_names == ["image_id"]
    assert ds.label_names == ["not Blond_Hair", "Blond_Hair"]
    assert ds.group_names == ["not Male", "Male"]
    for part, code in (("train", 0), ("test", 2)):
        ids = getattr(ds, f"x_{part}")[:, 0].astype(int)
        assert ids.tolist() == sorted(i for i, p in partition.items() if p == code)
        assert getattr(ds, f"y_{part}").tolist() == [int(attr[i][blond] == 1) for i in ids]
        assert getattr(ds, f"s_{part}").tolist() == [int(attr[i][male] == 1) for i in ids]
    assert ds.meta["valid"]["image_ids"] == sorted(i for i, p in partition.items() if p == 1)
    assert ds.meta["valid"]["y"] == [int(attr[i][blond] == 1) for i in ds.meta["valid"][
        "image_ids"]]
    assert "Blond_Hair" in ds.meta["preprocessing"] and "178x178" in ds.meta["preprocessing"]
    assert "32x32" in ds.meta["preprocessing"]
    default = load_dataset("celeba")   # the existing task is unchanged
    np.testing.assert_array_equal(default.x_train, ds.x_train)
    np.testing.assert_array_equal(default.y_train, ds.s_train)   # Male in both tasks
    assert default.meta["images"]["size"] == 128 and "center_crop" not in default.meta["images"]


def test_images_are_center_cropped_then_resized_to_32(sample, tmp_path):
    ds = load_prepared(save_prepared(load_dataset("celeba-blond"), tmp_path / "prepared"))
    assert ds.meta["images"]["size"] == 32 and ds.meta["images"]["center_crop"] == 178
    images = celeba.CelebAImages.from_prepared(ds, "train")
    first = images[0]
    assert first.shape == (3, 32, 32) and first.dtype == torch.float32
    from torchvision import transforms

    path = images.paths[0]
    with Image.open(path) as image:
        expected = transforms.Compose([transforms.CenterCrop(178), transforms.Resize((32, 32)),
                                       transforms.ToTensor()])(image.convert("RGB"))
    torch.testing.assert_close(first, expected, rtol=0, atol=0)
    assert celeba.CelebAImages.from_prepared(ds, "valid")[0].shape == (3, 32, 32)


def test_crop_takes_the_central_178x178_of_an_aligned_178x218_image():
    pixels = np.zeros((218, 178, 3), dtype=np.uint8)
    pixels[:20], pixels[-20:] = 255, 255           # the rows the 178x178 center crop removes
    out = celeba.image_transform(32, crop=178)(Image.fromarray(pixels))
    assert out.shape == (3, 32, 32) and out.max() == 0
    assert celeba.image_transform(32)(Image.fromarray(pixels)).max() > 0   # no crop: kept


def test_missing_files_give_a_marked_standin(tmp_path, monkeypatch):
    for var, value in {"DPMINIMAX_DATA_RAW": tmp_path / "raw", "DPMINIMAX_DATA": tmp_path / "x",
                       "DPMINIMAX_CACHE": tmp_path / "cache", "DPMINIMAX_OFFLINE": "1"}.items():
        monkeypatch.setenv(var, str(value))
    ds = load_dataset("celeba-blond", missing_data="standin")
    assert ds.meta["standin"] is True and ds.meta["standin_note"] == STANDIN_NOTE
    assert all("synthetic stand-in" in f["verified_by"] for f in ds.meta["source_files"])
    assert celeba.CelebAImages.from_prepared(ds, "test")[0].shape == (3, 32, 32)


@pytest.mark.usefixtures("offline_data")
@real("celeba-blond")
def test_celeba_blond_real_counts():
    ds = load_dataset("celeba-blond")
    assert (len(ds.y_train), len(ds.y_test), len(ds.meta["valid"]["y"])) == (
        162_770, 19_962, 19_867)
    assert ds.meta["positive_rate"]["train"] == pytest.approx(0.149, abs=0.002)  # Sagawa et al.
    assert ds.meta["positive_rate"]["test"] == pytest.approx(0.133, abs=0.003)
