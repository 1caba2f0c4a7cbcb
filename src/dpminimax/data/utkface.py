"""UTK-Face (Zhang, Song & Qi 2017), aligned & cropped faces, for DP-FERMI's image experiment.

Canonical file: ``UTKFace.tar.gz`` from the project page :data:`PAGE` (a Google Drive file behind
a confirmation page, so it is fetched by hand or with ``gdown``): 23,708 JPEGs (200x200) in the
folder ``UTKFace/``, named ``<age>_<gender>_<race>_<date&time>.jpg.chip.jpg`` with age 0-116,
gender 0 (male) / 1 (female) and race 0-4 (White, Black, Asian, Indian, Others). No checksum is
published, so the archive is accepted by content (:func:`check_utkface_content`): 23,708 regular
files, all ``*.jpg.chip.jpg`` in a ``UTKFace/`` folder.

Task (App. F, the code's ``UTKFaceDataset``):

* label: 9 age bins (0,10], (10,15], (15,20], (20,25], (25,30], (30,40], (40,50], (50,60],
  (60,120] (the code's bins; age 0 goes to the first bin, as the code's default label 0);
* sensitive attribute: race 0-4 (k = 5 groups);
* file names that do not match the pattern (the canonical archive has a few without the race
  field) are dropped and counted in ``meta["malformed_files"]``; so is an age above 120;
* split: the well-formed names, sorted, are shuffled with ``split_seed`` and split 3:1 (as every
  tabular dataset here, :func:`dpminimax.data.splits.train_test_indices`; the paper's code
  shuffles with ``random.Random(100)``, which returns None, so its split is not reproducible);
  ``max_rows`` keeps the first rows of that order before splitting;
* pixels: each image is resized to ``size`` x ``size`` (default 128, the paper's; no crop) and
  scaled to [0, 1] by :func:`dpminimax.data.celeba.image_transform` (torchvision ``Resize`` +
  ``ToTensor``; images are converted to RGB first), then normalised per channel with the mean
  and (population) standard deviation over all train pixels of that channel (our choice, the paper
  only says "normalized": the paper says "normalized" but its code only scales to [0, 1]). The
  statistics are in ``meta["normalisation"]``. Like the z-scores of the tabular datasets they are
  computed from the train split outside the privacy accounting (they do not depend on the sensitive
  attribute, the quantity DP-FERMI protects, Def. 2.2).

A prepared UTK-Face dataset has kind ``"image"``: ``x_*`` is float32 (n, 3, size, size); at 128
that is 192 KiB per image, 4.4 GiB for the whole archive. Preparing reads only the selected
images (one pass over the archive).
"""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from dpminimax.data.celeba import DRIVE_URL, image_transform
from dpminimax.data.errors import ChecksumMismatchError
from dpminimax.data.schema import CanonicalFile, DatasetSpec, LocatedFile, PreparedDataset, assemble
from dpminimax.data.sources import manual_download
from dpminimax.data.splits import train_test_indices

PAGE = "https://susanqq.github.io/UTKFace/"
ARCHIVE, FOLDER = "UTKFace.tar.gz", "UTKFace"
DRIVE_ID = "0BxYys69jI14kYVM3aVhKS1VhRUk"  # "Aligned&Cropped Faces" on the project page
SUFFIX = ".jpg.chip.jpg"
EXPECTED_FILES = 23_708
IMAGE_SIZE = 128
NAME = re.compile(r"(\d+)_[01]_([0-4])_\d+" + re.escape(SUFFIX))
AGE_EDGES = (10, 15, 20, 25, 30, 40, 50, 60, 120)  # right edges of the 9 bins
LABELS = ["(0,10]", "(10,15]", "(15,20]", "(20,25]", "(25,30]", "(30,40]", "(40,50]", "(50,60]",
          "(60,120]"]
GROUPS = ["White", "Black", "Asian", "Indian", "Others"]
MALFORMED_SAMPLE = 3  # names without the race field written by the sample writer


@dataclass
class UTKFaceIndex:
    """The archive's well-formed image names (sorted) with label and race; no pixels."""

    archive: Path
    names: list[str]  # member names inside the archive
    y: np.ndarray  # age bin 0..8
    s: np.ndarray  # race 0..4
    malformed: list[str]  # member names dropped
    size: int


def archive_members(path: str | Path) -> list[str]:
    """Names of the regular files inside the gzipped tar at ``path``, in archive order."""
    with tarfile.open(path, "r:gz") as archive:
        return [member.name for member in archive if member.isfile()]


def check_utkface_content(path: Path) -> None:
    """Accept the archive only with 23,708 files, all ``UTKFace/*.jpg.chip.jpg``."""
    try:
        members = archive_members(path)
    except (tarfile.TarError, OSError, EOFError) as err:
        raise ChecksumMismatchError(f"{path}: not the canonical {ARCHIVE} ({PAGE}): {err}") from err
    strays = [m for m in members if PurePosixPath(m).parent.name != FOLDER
              or not m.endswith(SUFFIX)]
    if len(members) != EXPECTED_FILES or strays:
        raise ChecksumMismatchError(
            f"{path}: content differs from the canonical {ARCHIVE} ({PAGE}): expected "
            f"{EXPECTED_FILES} files {FOLDER}/*{SUFFIX}, found {len(members)} files"
            + (f", {len(strays)} of them not of that form (e.g. {strays[0]!r})" if strays else "")
            + ". Never used; replace it with the canonical file.")


FILES = (CanonicalFile(
    ARCHIVE, DRIVE_URL + DRIVE_ID, sha256=None,
    fetch=manual_download(f"UTKFace.tar.gz is on Google Drive behind a confirmation page; run "
                          f"`pip install gdown && gdown {DRIVE_ID}`, or download "
                          f"'Aligned&Cropped Faces' from {PAGE}"),
    content_check=check_utkface_content),)


def age_bin(age: int) -> int:
    """Index of the age bin of ``age`` (0 for ages 0-10, ..., 8 for 61-120); ValueError above."""
    if not 0 <= age <= AGE_EDGES[-1]:
        raise ValueError(f"age {age} is outside [0, {AGE_EDGES[-1]}]")
    return int(np.searchsorted(AGE_EDGES, age, side="left"))


def load_utkface(paths: Mapping[str, Path], *, size: int = IMAGE_SIZE) -> UTKFaceIndex:
    """Parse label and race from the member names; malformed names are set aside."""
    names, y, s, malformed = [], [], [], []
    for member in sorted(archive_members(paths[ARCHIVE])):
        match = NAME.fullmatch(PurePosixPath(member).name)
        if match is None or int(match[1]) > AGE_EDGES[-1]:
            malformed.append(member)
            continue
        names.append(member)
        y.append(age_bin(int(match[1])))
        s.append(int(match[2]))
    return UTKFaceIndex(archive=paths[ARCHIVE], names=names, y=np.array(y, dtype=np.int64),
                        s=np.array(s, dtype=np.int64), malformed=malformed, size=size)


def read_images(archive: str | Path, names: Sequence[str], size: int) -> np.ndarray:
    """float32 (len(names), 3, size, size) in [0, 1], in the order of ``names`` (one pass)."""
    from PIL import Image

    transform = image_transform(size)
    row = {name: i for i, name in enumerate(names)}
    images = np.empty((len(names), 3, size, size), dtype=np.float32)
    seen = 0
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            if member.name in row:
                with Image.open(io.BytesIO(tar.extractfile(member).read())) as image:
                    images[row[member.name]] = transform(image.convert("RGB")).numpy()
                seen += 1
    if seen != len(names):
        raise ValueError(f"{archive}: {len(names) - seen} of the requested images are missing")
    return images


def channel_statistics(images: np.ndarray, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and population standard deviation over all pixels of ``images``
    (n, C, H, W), accumulated in float64 over chunks of images (no full-size temporaries)."""
    total = np.zeros(images.shape[1])
    squares = np.zeros(images.shape[1])
    for start in range(0, len(images), chunk):
        block = images[start:start + chunk].astype(np.float64)
        total += block.sum(axis=(0, 2, 3))
        squares += np.square(block).sum(axis=(0, 2, 3))
    count = images.shape[0] * images.shape[2] * images.shape[3]
    mean = total / count
    return mean, np.sqrt(np.maximum(squares / count - mean**2, 0.0))


def prepare_utkface(spec: DatasetSpec, index: UTKFaceIndex, sources: list[LocatedFile], *,
                    max_rows: int | None, split_seed: int,
                    test_fraction: float) -> PreparedDataset:
    """Split 3:1 (shuffled with ``split_seed``), read and normalise the selected images."""
    train, test = train_test_indices(len(index.names), seed=split_seed,
                                     test_fraction=test_fraction, max_rows=max_rows)
    rows = np.concatenate([train, test])
    images = read_images(index.archive, [index.names[i] for i in rows], index.size)
    mean, std = channel_statistics(images[:len(train)])
    std = np.where(std > 0, std, 1.0)
    images -= mean.astype(np.float32)[None, :, None, None]
    images /= std.astype(np.float32)[None, :, None, None]
    feature_names = [f"pixel_{c}_{h}_{w}" for c in range(3) for h in range(index.size)
                     for w in range(index.size)]
    ds = assemble(
        spec,
        {"x_train": images[:len(train)], "y_train": index.y[train], "s_train": index.s[train],
         "x_test": images[len(train):], "y_test": index.y[test], "s_test": index.s[test]},
        feature_names=feature_names, label_names=LABELS, group_names=GROUPS, sources=sources,
        split={"scheme": "shuffled", "seed": split_seed, "test_fraction": test_fraction,
               "max_rows": max_rows, "n_rows_total": len(index.names)},
    )
    ds.meta["malformed_files"] = {"count": len(index.malformed), "names": index.malformed}
    ds.meta["images"] = {"size": index.size, "channels": 3, "layout": "n x 3 x size x size"}
    ds.meta["normalisation"] = {
        "mean": mean.tolist(), "std": std.tolist(),
        "statistics": "train split, all pixels of each channel after scaling to [0, 1] "
                      "(population standard deviation)"}
    return ds


def write_utkface_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write ``UTKFace.tar.gz`` with ``n_rows`` random 24x24 JPEGs under canonical names, plus
    :data:`MALFORMED_SAMPLE` names without the race field (as in the canonical archive)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    names = [f"{rng.integers(0, 117)}_{rng.integers(0, 2)}_{rng.integers(0, 5)}_"
             f"{20170109000000000 + i}{SUFFIX}" for i in range(n_rows)]
    names += [f"{rng.integers(1, 117)}_{rng.integers(0, 2)}_{20170116000000000 + i}{SUFFIX}"
              for i in range(MALFORMED_SAMPLE)]
    path = Path(directory) / ARCHIVE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped, \
            tarfile.open(fileobj=zipped, mode="w") as tar:
        for name in rng.permutation(names):
            buffer = io.BytesIO()
            Image.fromarray(rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)).save(buffer, "JPEG")
            _add(tar, f"{FOLDER}/{name}", buffer.getvalue())
    return [path]


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    tar.addfile(info, io.BytesIO(data))
