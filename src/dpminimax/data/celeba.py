"""CelebA (Liu, Luo, Wang & Tang 2015) in torchvision's on-disk layout, images read lazily.

Canonical files: the six files of torchvision's ``CelebA.file_list`` (``img_align_celeba.zip``
with the 202,599 aligned 178x218 JPEGs, and the five annotation text files), pinned by the md5s
torchvision publishes; CelebA publishes no sha256. They live on Google Drive behind a
confirmation page, so they are fetched by hand (or with ``torchvision.datasets.CelebA(root,
download=True)``, which needs ``gdown``). The verified files are unpacked into
``<cache>/CelebA/<key>/celeba/`` (torchvision's layout: ``img_align_celeba/`` and the text
files; one directory per set of sources, keyed by their sha256s), so
``torchvision.datasets.CelebA(root, download=False)`` reads the same directory. We parse the two
text files we need (``list_eval_partition.txt``, ``list_attr_celeba.txt``) and open the JPEGs
with PIL ourselves, with the same transform, instead of going through torchvision's class
(our rule: image datasets go through torchvision's classes): that class re-checks the md5s of
the text files against its own pinned list, so a synthetic stand-in in the canonical format
(``dpminimax.data.standin``) could never be read by it. The files were already verified against
the same md5s when located; a test checks that our reader and torchvision's class return the
same splits, attributes and pixels.

Task (the paper names only the sensitive attribute): label and sensitive attribute are two of the
40 binary attributes (torchvision maps -1/1 to 0/1): by default label ``Male`` and sensitive
``Smiling`` (RaCO-DP's ``celeba.yaml``; registry ``celeba``), or the reverse (registry
``celeba-smiling``). Paper 004 (Sec. 5.1) uses Sagawa et al. (2019)'s task: label
``Blond_Hair``, sensitive (spurious) ``Male``, images center-cropped to 178x178 and then resized
(registry ``celeba-blond``, 32x32: ``load_celeba(size=..., crop=...)``).
Official splits: train (162,770) and test (19,962) become the prepared train/test splits; valid
(19,867) is kept in ``meta["valid"]``. By default images are resized to 128x128 (no crop) and
scaled to float32 in [0, 1].

Storage: preparing never reads an image. A prepared CelebA dataset has kind ``"image-files"``:
``x_*`` is one column, the image number (``000001.jpg`` -> 1), and ``meta["images"]`` names the
torchvision root and image size; :class:`CelebAImages` opens the images on access for the trainer.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpminimax.atomic import write_json
from dpminimax.data.checksum import file_digest
from dpminimax.data.locate import cache_dir
from dpminimax.data.schema import (
    CanonicalFile,
    DatasetSpec,
    LocatedFile,
    PreparedDataset,
    assemble,
)
from dpminimax.data.sources import manual_download
from dpminimax.data.splits import subsample

PAGE = "https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html"
DRIVE_URL = "https://drive.google.com/uc?id="
IMAGE_ZIP, IMAGE_DIR = "img_align_celeba.zip", "img_align_celeba"
IMAGE_SIZE = 128
SPLITS = ("train", "valid", "test")  # torchvision split names
# (Google Drive file id, md5, filename) exactly as torchvision.datasets.CelebA.file_list.
FILE_LIST = (
    ("0B7EVK8r0v71pZjFTYXZWM3FlRnM", "00d2c5bc6d35e252742224ab0c1e8fcb", IMAGE_ZIP),
    ("0B7EVK8r0v71pblRyaVFSWGxPY0U", "75e246fa4810816ffd6ee81facbd244c", "list_attr_celeba.txt"),
    ("1_ee_0u7vcNLOfNLegJRHmolfH5ICW-XS", "32bd1bd63d3c78cd57e08160ec5ed1e2",
     "identity_CelebA.txt"),
    ("0B7EVK8r0v71pbThiMVRxWXZ4dU0", "00566efa6fedff7a56946cd1c10f1c16", "list_bbox_celeba.txt"),
    ("0B7EVK8r0v71pd0FJY3Blby1HUTQ", "cc24ecafdb5b50baae59b03474781f8c",
     "list_landmarks_align_celeba.txt"),
    ("0B7EVK8r0v71pY0NSMzRuSXJEVkk", "d32c9cbf5e040fd4025c592c306e6668",
     "list_eval_partition.txt"),
)
_MANUAL = manual_download(
    "CelebA is on Google Drive behind a confirmation page; run `pip install gdown` and "
    "torchvision.datasets.CelebA(root, download=True) (it writes <root>/celeba/), or download the "
    f"files from the links on {PAGE}")
FILES = tuple(CanonicalFile(name, DRIVE_URL + file_id, sha256=None, md5=md5, fetch=_MANUAL)
              for file_id, md5, name in FILE_LIST)
ATTRIBUTES = ["5_o_Clock_Shadow", "Arched_Eyebrows", "Attractive", "Bags_Under_Eyes", "Bald",
              "Bangs", "Big_Lips", "Big_Nose", "Black_Hair", "Blond_Hair", "Blurry", "Brown_Hair",
              "Bushy_Eyebrows", "Chubby", "Double_Chin", "Eyeglasses", "Goatee", "Gray_Hair",
              "Heavy_Makeup", "High_Cheekbones", "Male", "Mouth_Slightly_Open", "Mustache",
              "Narrow_Eyes", "No_Beard", "Oval_Face", "Pale_Skin", "Pointy_Nose",
              "Receding_Hairline", "Rosy_Cheeks", "Sideburns", "Smiling", "Straight_Hair",
              "Wavy_Hair", "Wearing_Earrings", "Wearing_Hat", "Wearing_Lipstick",
              "Wearing_Necklace", "Wearing_Necktie", "Young"]


@dataclass
class CelebAIndex:
    """Image numbers, label and sensitive attribute (0/1) of each official split; no pixels."""

    root: Path
    label: str
    sensitive: str
    splits: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # part -> (ids, y, s)
    size: int = IMAGE_SIZE  # images are resized to size x size
    crop: int | None = None  # center crop to crop x crop before resizing (None: no crop)


#: The sources' sha256s, written last into an unpacked directory (it is complete when present).
SOURCES_STAMP = ".sources.json"


def image_filename(image_id: int) -> str:
    return f"{image_id:06d}.jpg"


def torchvision_root(paths: Mapping[str, Path]) -> Path:
    """Unpack the verified files into ``<cache>/CelebA/<key>/celeba/``; return the torchvision
    root ``<cache>/CelebA/<key>``.

    ``key`` is a digest of the sources' sha256s: datasets prepared from different sources (the
    real files, or stand-ins of different sizes) never share a directory, so preparing one
    never removes the images another's training job reads. A directory is built once, in a
    partial directory of this process, and renamed into place; a concurrent build of the same
    sources that finishes first wins, and this one's copy is dropped.
    """
    digests = {file.filename: file_digest(paths[file.filename]) for file in FILES}
    key = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:16]
    root = cache_dir() / "CelebA" / key
    target = root / "celeba"
    if (target / SOURCES_STAMP).is_file():
        return root
    partial = root / f"celeba.partial.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with zipfile.ZipFile(paths[IMAGE_ZIP]) as archive:
        archive.extractall(partial)
    for file in FILES[1:]:
        shutil.copyfile(paths[file.filename], partial / file.filename)
    write_json(partial / SOURCES_STAMP, digests)
    try:
        partial.rename(target)
    except OSError:  # another process renamed the same build into place first
        shutil.rmtree(partial, ignore_errors=True)
    return root


def image_transform(size: int = IMAGE_SIZE, crop: int | None = None) -> Any:
    """Resize to ``size`` x ``size`` and scale to float32 in [0, 1] (C x H x W); with ``crop``,
    first center-crop to ``crop`` x ``crop`` (torchvision ``CenterCrop``; Sagawa et al.'s 178)."""
    from torchvision import transforms

    steps = [] if crop is None else [transforms.CenterCrop(crop)]
    return transforms.Compose([*steps, transforms.Resize((size, size)), transforms.ToTensor()])


def read_partition(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``list_eval_partition.txt``: lines ``000001.jpg 0``; returns image numbers and the official
    partition (0 train, 1 valid, 2 test)."""
    rows = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
    ids = np.array([int(Path(name).stem) for name, _ in rows], dtype=np.int64)
    return ids, np.array([int(part) for _, part in rows], dtype=np.int64)


def read_attributes(path: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``list_attr_celeba.txt``: a count line, a header of 40 names, then ``000001.jpg -1 1 ...``;
    returns the names, the image numbers and the attributes mapped from -1/1 to 0/1."""
    lines = Path(path).read_text().splitlines()
    names = lines[1].split()
    rows = [line.split() for line in lines[2:] if line.strip()]
    ids = np.array([int(Path(row[0]).stem) for row in rows], dtype=np.int64)
    values = np.array([row[1:] for row in rows], dtype=np.int64)
    if values.shape[1:] != (len(names),):
        raise ValueError(f"{path}: {values.shape[1:]} attribute columns, header names "
                         f"{len(names)}")
    return names, ids, (values + 1) // 2


def load_celeba(paths: Mapping[str, Path], *, label: str = "Male", sensitive: str = "Smiling",
                size: int = IMAGE_SIZE, crop: int | None = None) -> CelebAIndex:
    """Read the official splits' image numbers and the two attributes from the text files;
    ``size`` and ``crop`` say how :class:`CelebAImages` will transform the images."""
    root = torchvision_root(paths)
    names, attr_ids, attr = read_attributes(root / "celeba" / "list_attr_celeba.txt")
    columns = [_attribute_column(names, name) for name in (label, sensitive)]
    part_ids, partition = read_partition(root / "celeba" / "list_eval_partition.txt")
    if not np.array_equal(attr_ids, part_ids):
        raise ValueError(f"{root / 'celeba'}: list_attr_celeba.txt and list_eval_partition.txt "
                         "list different images")
    splits = {part: (attr_ids[partition == code], attr[partition == code, columns[0]],
                     attr[partition == code, columns[1]])
              for code, part in enumerate(SPLITS)}
    return CelebAIndex(root=root, label=label, sensitive=sensitive, splits=splits, size=size,
                       crop=crop)


def _attribute_column(names: Sequence[str], name: str) -> int:
    if name not in names:
        raise ValueError(f"unknown CelebA attribute {name!r}; known: {', '.join(ATTRIBUTES)}")
    return list(names).index(name)


def prepare_celeba(spec: DatasetSpec, index: CelebAIndex, sources: list[LocatedFile], *,
                   max_rows: int | None, split_seed: int) -> PreparedDataset:
    """Index arrays of the official splits; ``max_rows`` subsamples each (kept in file order)."""
    kept = {}
    for part, (ids, y, s) in index.splits.items():
        rows = np.sort(subsample(len(ids), max_rows, split_seed))
        kept[part] = (ids[rows], y[rows], s[rows])
    arrays = {f"{name}_{part}": array for part in ("train", "test")
              for name, array in zip(("x", "y", "s"), kept[part], strict=True)}
    arrays |= {"x_train": arrays["x_train"][:, None], "x_test": arrays["x_test"][:, None]}
    ds = assemble(spec, arrays, feature_names=["image_id"],
                  label_names=[f"not {index.label}", index.label],
                  group_names=[f"not {index.sensitive}", index.sensitive], sources=sources,
                  split={"scheme": "canonical", "seed": split_seed, "max_rows": max_rows,
                         "test_fraction": None})
    ids, y, s = kept["valid"]
    ds.meta["valid"] = {"image_ids": ids.tolist(), "y": y.tolist(), "s": s.tolist()}
    ds.meta["images"] = {"torchvision_root": str(index.root), "size": index.size,
                         "x_column": "image number: <root>/celeba/img_align_celeba/%06d.jpg"}
    if index.crop is not None:
        ds.meta["images"]["center_crop"] = index.crop
    return ds


class CelebAImages:
    """The images of a prepared CelebA split, opened on access (a map-style torch dataset).

    Item ``i`` is the float32 tensor (3 x size x size, values in [0, 1]) of image ``image_ids[i]``,
    ``<root>/celeba/img_align_celeba/%06d.jpg`` opened with PIL as RGB (as torchvision's class
    does) and passed through :func:`image_transform` (``size``, ``crop``).
    """

    def __init__(self, root: str | Path, image_ids: Sequence[int], size: int = IMAGE_SIZE,
                 crop: int | None = None):
        self.directory = Path(root) / "celeba" / IMAGE_DIR
        self.paths = [self.directory / image_filename(int(i)) for i in image_ids]
        missing = [path for path in self.paths[:1] + self.paths[-1:] if not path.is_file()]
        if missing:
            raise FileNotFoundError(f"CelebA image {missing[0]} is missing; delete "
                                    f"{self.directory.parent / '.sources.json'} and prepare the "
                                    "dataset again to re-unpack img_align_celeba.zip")
        self.transform = image_transform(size, crop)

    @classmethod
    def from_prepared(cls, ds: PreparedDataset, part: str) -> CelebAImages:
        """The images of ``part`` ("train", "test" or "valid") of a prepared CelebA dataset."""
        ids = ds.meta["valid"]["image_ids"] if part == "valid" else getattr(ds, f"x_{part}")[:, 0]
        images = ds.meta["images"]
        return cls(images["torchvision_root"], ids, images["size"], images.get("center_crop"))

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> Any:
        from PIL import Image

        with Image.open(self.paths[index]) as image:
            return self.transform(image.convert("RGB"))


def write_celeba_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write the six canonical files for ``n_rows`` random 44x54 images (all three splits used)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    names = [image_filename(i) for i in range(1, n_rows + 1)]
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out / IMAGE_ZIP, "w") as archive:
        for name in names:
            path = out / name
            Image.fromarray(rng.integers(0, 256, (54, 44, 3), dtype=np.uint8)).save(path)
            archive.write(path, f"{IMAGE_DIR}/{name}")
            path.unlink()
    attr = rng.choice([-1, 1], (n_rows, len(ATTRIBUTES)))
    partition = rng.permutation(np.arange(n_rows) % 3)

    def table(header: str | None, rows: list[str]) -> str:
        lines = [str(n_rows), header] if header is not None else []
        return "\n".join([*lines, *rows]) + "\n"

    texts = {
        "list_attr_celeba.txt": table(" ".join(ATTRIBUTES), [
            name + "".join(f"{v:3d}" for v in row) for name, row in zip(names, attr, strict=True)]),
        "identity_CelebA.txt": table(None, [f"{n} {rng.integers(1, 10_178)}" for n in names]),
        "list_bbox_celeba.txt": table("image_id x_1 y_1 width height", [
            f"{n} " + " ".join(f"{v:5d}" for v in rng.integers(1, 400, 4)) for n in names]),
        "list_landmarks_align_celeba.txt": table(
            "lefteye_x lefteye_y righteye_x righteye_y nose_x nose_y leftmouth_x leftmouth_y "
            "rightmouth_x rightmouth_y",
            [f"{n} " + " ".join(f"{v:4d}" for v in rng.integers(60, 160, 10)) for n in names]),
        "list_eval_partition.txt": table(None, [
            f"{n} {p}" for n, p in zip(names, partition, strict=True)]),
    }
    for name, text in texts.items():
        (out / name).write_text(text)
    return [out / file.filename for file in FILES]
