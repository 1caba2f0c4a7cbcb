"""CIFAR-10 (Krizhevsky 2009) from the canonical python archive, and CIFAR10-ST.

Canonical file: ``cifar-10-python.tar.gz`` from the authors' page, pinned by its sha256 and by the
md5 torchvision publishes. It holds ``cifar-10-batches-py/`` with ``data_batch_1`` .. ``_5``,
``test_batch`` and ``batches.meta``: Python 2 pickles of dicts whose ``data`` is a 10000 x 3072
uint8 array (channel-major RGB 32x32 rows: 1024 red, 1024 green, 1024 blue) and ``labels`` a list
of class ids 0..9 (``label_names`` in ``batches.meta``). The pickles are read straight from the
verified archive with an unpickler that accepts only the numpy globals an array needs (nothing
else can run), keys decoded as the authors' page shows (``encoding="bytes"``); an extracted
``cifar-10-batches-py`` directory can be read with :func:`read_cifar10` too. We parse the pickles
ourselves rather than through ``torchvision.datasets.CIFAR10`` because that class re-checks the
batch files against its pinned md5s, so a synthetic stand-in (``dpminimax.data.standin``) could
never be read by it; a test checks that both readers agree on a canonical-format sample.

CIFAR10-ST (paper 004's Sec. 5.1; the dataset of Qi et al. 2022):
the training split in torchvision's index order (``data_batch_1`` .. ``_5`` concatenated); classes
0-4 keep only their LAST 100 images, classes 5-9 keep all 5,000, so n = 5 x 100 + 5 x 5,000 =
25,500 in 10 classes, kept rows in their original order. The test split (10,000, balanced) is
untouched. Pixels become float32 in [0, 1] of shape (n, 3, 32, 32) in
:func:`dpminimax.data.images.prepare_images`; no sensitive attribute (one group ``all``).
"""

from __future__ import annotations

import gzip
import io
import pickle
import struct
import tarfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpminimax.data.schema import CanonicalFile, ImageSplits

PAGE = "https://www.cs.toronto.edu/~kriz/cifar.html"
ARCHIVE = "cifar-10-python.tar.gz"
URL = "https://www.cs.toronto.edu/~kriz/" + ARCHIVE
FOLDER = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
META = "batches.meta"
FILES = (CanonicalFile(
    ARCHIVE, URL, sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    md5="c58f30108f718f92721af3b95e74349a"),)
LABEL_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck"]
SHAPE = (3, 32, 32)

#: CIFAR10-ST: these classes keep only their last ``ST_KEEP`` training images.
ST_CLASSES = (0, 1, 2, 3, 4)
ST_KEEP = 100

_RECONSTRUCT = np.arange(1).__reduce__()[0]  # numpy's array-unpickling function
_GLOBALS = {("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
            ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
            ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}


class _ArrayUnpickler(pickle.Unpickler):
    """Loads plain containers, strings, numbers and numpy arrays; refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _GLOBALS[module, name]
        except KeyError:
            raise pickle.UnpicklingError(
                f"unexpected global {module}.{name} in a CIFAR-10 batch file") from None


def unpickle(data: bytes) -> dict[str, Any]:
    """A CIFAR-10 batch (Python 2 pickle) as a dict with str keys (and bytes string values)."""
    entry = _ArrayUnpickler(io.BytesIO(data), encoding="bytes").load()
    return {key.decode("latin1") if isinstance(key, bytes) else key: value
            for key, value in entry.items()}


def _batch_bytes(source: Path, names: Iterable[str]) -> dict[str, bytes]:
    """The raw bytes of the named batch files, from the archive or an extracted folder."""
    wanted = set(names)
    source = Path(source)
    if source.is_dir():
        folder = source / FOLDER if (source / FOLDER).is_dir() else source
        return {name: (folder / name).read_bytes() for name in wanted}
    found: dict[str, bytes] = {}
    with tarfile.open(source, "r:gz") as archive:
        for member in archive:
            folder, _, name = member.name.removeprefix("./").partition("/")
            stream = archive.extractfile(member) if member.isfile() else None
            if folder == FOLDER and name in wanted and stream is not None:
                found[name] = stream.read()
    missing = sorted(wanted - set(found))
    if missing:
        raise ValueError(f"{source}: no {', '.join(f'{FOLDER}/{n}' for n in missing)} in the "
                         "archive")
    return found


def _split(batches: Mapping[str, bytes], names: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for name in names:
        entry = unpickle(batches[name])
        data, labels = np.asarray(entry["data"]), np.asarray(entry["labels"], dtype=np.int64)
        if data.dtype != np.uint8 or data.ndim != 2 or data.shape != (len(labels), 3072):
            raise ValueError(f"{name}: data {data.dtype} {data.shape}, labels {labels.shape}; "
                             "expected uint8 (n, 3072) with n labels")
        xs.append(data.reshape(-1, *SHAPE))
        ys.append(labels)
    return np.concatenate(xs), np.concatenate(ys)


def read_cifar10(source: str | Path) -> ImageSplits:
    """Both canonical splits (uint8 n x 3 x 32 x 32, labels int64) from ``cifar-10-python.tar.gz``
    or an extracted ``cifar-10-batches-py`` directory (or its parent); training images in
    torchvision's order (``data_batch_1`` .. ``_5``)."""
    batches = _batch_bytes(Path(source), (*TRAIN_BATCHES, TEST_BATCH, META))
    x_train, y_train = _split(batches, TRAIN_BATCHES)
    x_test, y_test = _split(batches, (TEST_BATCH,))
    names = [n.decode("latin1") if isinstance(n, bytes) else str(n)
             for n in unpickle(batches[META])["label_names"]]
    return ImageSplits(x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test,
                       label_names=names)


def load_cifar10(paths: Mapping[str, Path]) -> ImageSplits:
    """The registry loader: both canonical splits from the verified archive."""
    return read_cifar10(paths[ARCHIVE])


def st_rows(labels: np.ndarray, classes: Iterable[int] = ST_CLASSES,
            keep: int = ST_KEEP) -> np.ndarray:
    """Indices (ascending) of the rows CIFAR10-ST keeps: every image of a class not in
    ``classes``, and the last ``keep`` images (in index order) of each class in ``classes``."""
    if keep < 0:
        raise ValueError(f"keep must be non-negative, got {keep}")
    labels = np.asarray(labels)
    kept = np.ones(len(labels), dtype=bool)
    for cls in classes:
        rows = np.flatnonzero(labels == cls)
        kept[rows[:max(len(rows) - keep, 0)]] = False
    return np.flatnonzero(kept)


def load_cifar10_st(paths: Mapping[str, Path]) -> ImageSplits:
    """CIFAR10-ST: the training split reduced by :func:`st_rows`, the test split untouched."""
    full = load_cifar10(paths)
    rows = st_rows(full.y_train)
    return ImageSplits(x_train=full.x_train[rows], y_train=full.y_train[rows],
                       x_test=full.x_test, y_test=full.y_test, label_names=full.label_names)


PREPROCESSING = (
    "training split = data_batch_1..5 in order (torchvision's index order); classes 0-4 "
    f"({', '.join(LABEL_NAMES[:5])}) keep only their last {ST_KEEP} images, classes 5-9 keep all "
    "(canonical n = 5 x 100 + 5 x 5,000 = 25,500; kept images in index order); test_batch "
    "untouched (10,000); 10 classes; pixels scaled to [0, 1] (float32, n x 3 x 32 x 32), no "
    "mean/std normalisation, no augmentation; no sensitive attribute (one group 'all', s = 0); "
    "max_rows subsamples each split afterwards (paper 004's Sec. 5.1 "
    "-- not the SCDRO code's second-half variant; dpminimax.data.cifar)"
)


# ---- canonical-format samples (stand-ins and tests) -------------------------------------------

class _Py2Pickler(pickle._Pickler):  # type: ignore[name-defined]
    """Protocol 2 as Python 2's cPickle wrote the CIFAR batches: ``bytes`` become Python 2
    ``str`` (SHORT_BINSTRING/BINSTRING, read back as bytes with ``encoding="bytes"`` and as str
    with ``"latin1"``) and arrays reference ``numpy.core.multiarray._reconstruct``."""

    dispatch = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]

    def save_py2_str(self, obj: bytes) -> None:
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    def save_ndarray(self, obj: np.ndarray) -> None:
        obj = np.ascontiguousarray(obj)
        self.write(pickle.GLOBAL + b"numpy.core.multiarray\n_reconstruct\n")
        self.save((np.ndarray, (0,), b"b"))
        self.write(pickle.REDUCE)
        self.memoize(obj)
        self.save((1, obj.shape, obj.dtype, False, obj.tobytes()))
        self.write(pickle.BUILD)

    dispatch[bytes] = save_py2_str
    dispatch[np.ndarray] = save_ndarray


def py2_pickle(obj: Any) -> bytes:
    """``obj`` pickled the way the canonical batch files are (see :class:`_Py2Pickler`)."""
    out = io.BytesIO()
    _Py2Pickler(out, protocol=2).dump(obj)
    return out.getvalue()


def batch_pickle(images: np.ndarray, labels: np.ndarray, batch_label: str,
                 filenames: list[str] | None = None) -> bytes:
    """One batch file: uint8 images (n x 3 x 32 x 32) and class ids, in the canonical format."""
    images = np.asarray(images, dtype=np.uint8)
    if images.shape[1:] != SHAPE:
        raise ValueError(f"images must be n x 3 x 32 x 32, got {images.shape}")
    filenames = filenames or [f"standin_{i:05d}.png" for i in range(len(images))]
    return py2_pickle({b"batch_label": batch_label.encode(),
                       b"labels": [int(v) for v in labels],
                       b"data": images.reshape(len(images), 3 * 32 * 32),
                       b"filenames": [name.encode() for name in filenames]})


def meta_pickle(per_batch: int) -> bytes:
    """``batches.meta`` in the canonical format."""
    return py2_pickle({b"num_cases_per_batch": per_batch,
                       b"label_names": [name.encode() for name in LABEL_NAMES],
                       b"num_vis": 3072})


def batch_files(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray,
                y_test: np.ndarray) -> dict[str, bytes]:
    """The seven files of ``cifar-10-batches-py/`` for the given splits (training images spread
    in order over the five training batches)."""
    chunks = np.array_split(np.arange(len(y_train)), len(TRAIN_BATCHES))
    files = {name: batch_pickle(x_train[rows], y_train[rows],
                                f"training batch {i} of {len(TRAIN_BATCHES)}")
             for i, (name, rows) in enumerate(zip(TRAIN_BATCHES, chunks, strict=True), 1)}
    files[TEST_BATCH] = batch_pickle(x_test, y_test, "testing batch 1 of 1")
    files[META] = meta_pickle(max(len(chunks[0]), 1))
    return files


def write_batches_dir(directory: Path, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` into ``<directory>/cifar-10-batches-py/``; return that folder."""
    folder = Path(directory) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def write_archive(path: Path, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` as ``cifar-10-batches-py/<name>`` members of a gzipped tar (reproducible
    bytes: zero timestamps)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{FOLDER}/{name}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            archive.addfile(info, io.BytesIO(data))
    return path


def write_cifar10_sample(directory: Path, n_rows: int, seed: int) -> list[Path]:
    """Write ``cifar-10-python.tar.gz`` with ``n_rows`` random images per split (training images
    spread over the five batches), labels balanced over the 10 classes in random order."""
    rng = np.random.default_rng(seed)
    splits = []
    for _ in ("train", "test"):
        splits += [rng.integers(0, 256, (n_rows, *SHAPE), dtype=np.uint8),
                   rng.permutation(np.arange(n_rows) % len(LABEL_NAMES))]
    return [write_archive(Path(directory) / ARCHIVE, batch_files(*splits))]
