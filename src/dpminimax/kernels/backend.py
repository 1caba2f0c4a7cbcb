"""Which kernels run: the one switch between the compiled CPU loops (numba) and torch.

Every compiled loop of the library (row logits and softmax, grouped sums, the sparse-row logits
and clipped sums, DP-FERMI's and PF-LD's fused gradient sums) is taken only where
:func:`~dpminimax.kernels.rowwise.compiled_supported` accepts its inputs, and that check asks
:func:`compiled_enabled` first. ``auto`` (the default) uses the compiled loops wherever the
inputs allow (CPU tensors; CUDA always takes torch); ``torch`` takes the torch path everywhere
(the reference the compiled loops are tested against). Set it with the environment variable
``DPMINIMAX_KERNELS`` or, in a process, :func:`use_kernels`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

BACKENDS = ("auto", "torch")
ENVIRONMENT = "DPMINIMAX_KERNELS"
_override: str | None = None


def kernel_backend() -> str:
    """The backend in force: :func:`use_kernels`'s, else ``$DPMINIMAX_KERNELS``, else auto."""
    backend = _override or os.environ.get(ENVIRONMENT, "auto")
    if backend not in BACKENDS:
        raise ValueError(f"{ENVIRONMENT}={backend!r}: must be one of {list(BACKENDS)}")
    return backend


def compiled_enabled() -> bool:
    """Whether compiled loops may run at all (their inputs are checked separately)."""
    return kernel_backend() == "auto"


@contextlib.contextmanager
def use_kernels(backend: str) -> Iterator[None]:
    """Run the block with kernel backend ``backend`` (one of :data:`BACKENDS`)."""
    global _override
    if backend not in BACKENDS:
        raise ValueError(f"kernel backend must be one of {list(BACKENDS)}, got {backend!r}")
    previous, _override = _override, backend
    try:
        yield
    finally:
        _override = previous
