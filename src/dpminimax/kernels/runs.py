"""The leading run axis R of batched programs (R runs of one method as one set of tensors)."""

from __future__ import annotations

import torch


def along_runs(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Per-run values (R,) viewed to broadcast against a tensor ``like`` of shape (R, ...)."""
    return values.view(-1, *[1] * (like.dim() - 1))
