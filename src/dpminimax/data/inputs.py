"""Model inputs of a prepared dataset: feature rows and in-memory images as tensors, image files
(CelebA) read on access.

Training gathers the sampled rows of every run each step (``gather(index)`` with index (R, B),
or ``take(index)``, which leaves feature rows in place for linear models);
evaluation runs the model over a whole split. Kinds "tabular" and "image" hold their inputs in
``x_*`` arrays; kind "image-files" holds image numbers there and the images are opened by
:class:`~dpminimax.data.celeba.CelebAImages` (162,770 training images at 128x128 would need 31 GiB
in memory).
"""

from __future__ import annotations

from typing import Any

import torch

from dpminimax.data.celeba import CelebAImages
from dpminimax.data.schema import PreparedDataset
from dpminimax.kernels.gather import RowGatherer


class ImageFileRows:
    """``gather(index)``: the images of training rows ``index`` (any shape), read from files."""

    def __init__(self, images: CelebAImages, device: torch.device) -> None:
        self.images = images
        self.device = device

    def gather(self, index: torch.Tensor) -> torch.Tensor:
        rows = [self.images[int(i)] for i in index.reshape(-1).tolist()]
        return torch.stack(rows).to(self.device).view(*index.shape, *rows[0].shape)

    def take(self, index: torch.Tensor) -> torch.Tensor:
        """The batch as models read it (``RowGatherer.take`` leaves feature rows in place;
        images are always read into one tensor)."""
        return self.gather(index)


def training_rows(data: PreparedDataset, device: torch.device) -> RowGatherer | ImageFileRows:
    """The gatherer of training inputs a batched program samples from."""
    if data.kind == "image-files":
        return ImageFileRows(CelebAImages.from_prepared(data, "train"), device)
    return RowGatherer(torch.as_tensor(data.x_train, device=device))


def split_inputs(data: PreparedDataset, split: str, device: torch.device) -> Any:
    """All inputs of ``split`` ("train" or "test"): a tensor, or for image files a map-style
    dataset of image tensors (models evaluate it in chunks)."""
    if data.kind == "image-files":
        return CelebAImages.from_prepared(data, split)
    return torch.as_tensor(getattr(data, f"x_{split}"), device=device)
