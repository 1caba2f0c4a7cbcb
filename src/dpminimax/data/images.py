"""MNIST (LeCun et al. 1998) and Fashion-MNIST (Xiao et al. 2017) from their gzipped IDX files.

The verified ``*.gz`` files are gunzipped into ``<cache>/<ClassName>/raw/`` (the layout
torchvision expects) and read by ``torchvision.datasets.MNIST`` / ``FashionMNIST`` with
``download=False``. The canonical train/test split is kept. Images become float32 in [0, 1] of
shape (n, 1, 28, 28); labels int64. The datasets have no sensitive attribute: every example is in
the single group ``all`` (s = 0).
"""

from __future__ import annotations

import functools
import gzip
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from dpminimax.atomic import atomic_path
from dpminimax.data.checksum import file_digest
from dpminimax.data.locate import cache_dir
from dpminimax.data.schema import (
    CanonicalFile,
    DatasetSpec,
    ImageSplits,
    LocatedFile,
    PreparedDataset,
    assemble,
)
from dpminimax.data.splits import subsample

PARTS = ("train", "t10k")
#: Training images of MNIST and Fashion-MNIST (a stand-in's size).
TRAIN_IMAGES = 60_000
IDX_NAMES = tuple(f"{part}-{kind}-ubyte.gz" for part in PARTS for kind in ("images-idx3",
                                                                           "labels-idx1"))
_IDX_MAGIC = {3: 0x0803, 1: 0x0801}  # unsigned bytes, 3 or 1 dimensions


def idx_files(base_url: str, sha256sums: str, md5sums: str) -> tuple[CanonicalFile, ...]:
    """The four IDX files under ``base_url``, pinned by ``sha256sum`` / ``md5sum``-style lines."""
    sha256, md5 = _sums(sha256sums), _sums(md5sums)
    return tuple(CanonicalFile(name, base_url + name, sha256[name], md5[name])
                 for name in IDX_NAMES)


def _sums(text: str) -> dict[str, str]:
    return {name: digest for digest, name in map(str.split, text.strip().splitlines())}


def gunzip_to_cache(paths: Mapping[str, Path], class_name: str) -> Path:
    """Gunzip the IDX files into ``<cache>/<class_name>/raw/``; return the torchvision root.

    A cached file is reused only while its ``.source-sha256`` stamp holds the sha256 of the
    verified source ``.gz`` and of the cached file's own current bytes; otherwise (a new source,
    or an edited cached file) it is written again from the source.
    """
    root = cache_dir()
    raw = root / class_name / "raw"
    for name in IDX_NAMES:
        target = raw / name.removesuffix(".gz")
        stamp = target.with_name(target.name + ".source-sha256")
        source_sha = file_digest(paths[name])
        if (target.is_file() and stamp.is_file()
                and stamp.read_text() == f"{source_sha} {file_digest(target)}"):
            continue
        with atomic_path(target) as tmp, gzip.open(paths[name], "rb") as source:
            tmp.write_bytes(source.read())
        with atomic_path(stamp) as tmp:
            tmp.write_text(f"{source_sha} {file_digest(target)}")
    return root


def load_idx(paths: Mapping[str, Path], *, class_name: str) -> ImageSplits:
    """Read both canonical splits through ``torchvision.datasets.<class_name>``."""
    import torchvision.datasets

    dataset_cls = getattr(torchvision.datasets, class_name)
    root = gunzip_to_cache(paths, class_name)
    train, test = (dataset_cls(str(root), train=flag, download=False) for flag in (True, False))
    return ImageSplits(
        x_train=train.data.numpy()[:, None], y_train=train.targets.numpy(),
        x_test=test.data.numpy()[:, None], y_test=test.targets.numpy(),
        label_names=list(train.classes),
    )


def prepare_images(
    spec: DatasetSpec, splits: ImageSplits, sources: list[LocatedFile], *,
    max_rows: int | None, split_seed: int,
) -> PreparedDataset:
    """Scale to [0, 1]; ``max_rows`` subsamples each canonical split (kept in original order)."""
    arrays = {}
    for part in ("train", "test"):
        x, y = getattr(splits, f"x_{part}"), getattr(splits, f"y_{part}")
        rows = np.sort(subsample(len(y), max_rows, split_seed))
        arrays |= {f"x_{part}": x[rows].astype(np.float32) / 255.0, f"y_{part}": y[rows],
                   f"s_{part}": np.zeros(len(rows), dtype=np.int64)}
    _, channels, height, width = splits.x_train.shape
    feature_names = [f"pixel_{c}_{h}_{w}" for c in range(channels) for h in range(height)
                     for w in range(width)]
    return assemble(spec, arrays, feature_names=feature_names, label_names=splits.label_names,
                    group_names=["all"], sources=sources,
                    split={"scheme": "canonical", "seed": split_seed, "max_rows": max_rows,
                           "test_fraction": None})


# sha256 of the pinned copies (lossless re-encodings); md5 as torchvision publishes it for the
# canonical host's files.
MNIST_FILES = idx_files("https://ossci-datasets.s3.amazonaws.com/mnist/", """
0b367032e93c5d0cea0925647cfdb18614af8ee15f83e6f2fc2ad904a6835971  train-images-idx3-ubyte.gz
1787548bbe0bff1ec2ecdc0ef292b02df999e2d1a6002d27500982c652b17203  train-labels-idx1-ubyte.gz
1a1a05eab793c14bb050b398624a11b0ffd1a2953baed553b1b9bd079e2a20be  t10k-images-idx3-ubyte.gz
b91679a0acfe4ba0e50a2437a903084cba1f5f92592b016a25a7dfd00455798b  t10k-labels-idx1-ubyte.gz
""", """
f68b3c2dcbeaaa9fbdd348bbdeb94873  train-images-idx3-ubyte.gz
d53e105ee54ea40749a09fcbcd1e9432  train-labels-idx1-ubyte.gz
9fb629c4189551a2d022fa330f9573f3  t10k-images-idx3-ubyte.gz
ec29112dd5afa0611ce80d1b7f02629c  t10k-labels-idx1-ubyte.gz
""")
# S3 website endpoints serve plain HTTP only; integrity comes from the checksums.
FASHION_FILES = idx_files("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/", """
b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7  train-images-idx3-ubyte.gz
0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056  train-labels-idx1-ubyte.gz
cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa  t10k-images-idx3-ubyte.gz
8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05  t10k-labels-idx1-ubyte.gz
""", """
8d4fb7e6c68d591d4c3dfef9ec88bf0d  train-images-idx3-ubyte.gz
25c81989df183df01b3e8a0aad5dffbe  train-labels-idx1-ubyte.gz
bef4ecab320f06d8554ea6380940ec79  t10k-images-idx3-ubyte.gz
bb300cfdad3c16e7a12a480ee83cd310  t10k-labels-idx1-ubyte.gz
""")
load_mnist = functools.partial(load_idx, class_name="MNIST")
load_fashion_mnist = functools.partial(load_idx, class_name="FashionMNIST")


def write_idx(path: Path, array: np.ndarray) -> Path:
    """Write a uint8 array (1 or 3 dimensions) as a gzipped IDX file."""
    header = struct.pack(">I", _IDX_MAGIC[array.ndim]) + struct.pack(f">{array.ndim}I",
                                                                      *array.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as out:
        out.write(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())
    return path


def write_idx_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write the four IDX files: ``n_rows`` random 28x28 images and labels 0..9 for training and
    a sixth as many for testing (the real files' 60,000 : 10,000)."""
    rng = np.random.default_rng(seed)
    written = []
    for part in PARTS:
        rows = n_rows if part == "train" else max(n_rows // 6, 1)
        images = rng.integers(0, 256, (rows, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, rows, dtype=np.uint8)
        written += [write_idx(Path(directory) / f"{part}-images-idx3-ubyte.gz", images),
                    write_idx(Path(directory) / f"{part}-labels-idx1-ubyte.gz", labels)]
    return written
