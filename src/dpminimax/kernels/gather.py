"""The sampled rows of a data set: gathered into a reused buffer, or left in place.

A batched step samples R x B rows (tens of MB for 100 runs). Models that need them as one
tensor get them gathered (``RowGatherer.gather``) into one buffer that grows when needed and is
reused: allocating a fresh tensor of that size every step costs more than the arithmetic on it
(each new allocation faults its pages in again). Linear models need no copy at all: they read
the sampled rows straight from the data set through their indices (``RowGatherer.take`` ->
:class:`IndexedRows`), which saves writing and re-reading the gathered copy (a sizeable share
of a RaCO-DP step; BENCHMARKS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


class RowGatherer:
    """``gather(index)`` returns ``source[index]`` (index of any shape) in a reused buffer;
    ``take(index)`` the same feature rows as :class:`IndexedRows`, without copying them.

    The tensor ``gather`` returns is a view of the buffer: it is overwritten by the next call.
    """

    def __init__(self, source: torch.Tensor) -> None:
        self.source = source
        self._buffer = source.new_empty((0, *source.shape[1:]))
        self._norms: torch.Tensor | None = None
        self._nonzeros: tuple[torch.Tensor, torch.Tensor] | None = None

    def gather(self, index: torch.Tensor) -> torch.Tensor:
        count = index.numel()
        if self._buffer.shape[0] < count:
            self._buffer = self.source.new_empty((count + count // 4, *self.source.shape[1:]))
        rows = torch.index_select(self.source, 0, index.reshape(-1), out=self._buffer[:count])
        return rows.view(*index.shape, *self.source.shape[1:])

    def take(self, index: torch.Tensor) -> IndexedRows | torch.Tensor:
        """Rows ``index`` (R, B) as models read them: feature rows (a 2-D source) left in place,
        anything else (images) gathered."""
        if self.source.dim() != 2:
            return self.gather(index)
        return IndexedRows(self, index)

    def norms(self) -> torch.Tensor:
        """l2 norm (n,) of every source row, computed once."""
        if self._norms is None:
            self._norms = torch.linalg.vector_norm(self.source, dim=-1)
        return self._norms

    def nonzeros(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The source (n, d) as padded sparse rows, computed once: ``(columns (n, w),
        values (n, w))`` with w the largest number of non-zeros in a row; row i's non-zeros in
        column order, then padding (column 0, value 0). One-hot encoded tables are mostly
        zeros (Adult: at most 13 of 102 per row, Credit-Card 22 of 85), so a compiled loop
        over these reads a fraction of each row. Columns are int16 when d allows (int32
        otherwise): the sampled rows are read at random, and the smaller table (Adult: 2.6 MB
        instead of 5.3 MB) is read faster (BENCHMARKS.md)."""
        if self._nonzeros is None:
            present = self.source != 0
            width = max(1, int(present.sum(dim=1).max())) if len(self.source) else 1
            # stable sort puts each row's non-zero columns first, in column order
            order = torch.sort((~present).to(torch.int8), dim=1, stable=True).indices
            columns = order[:, :width].contiguous()
            values = torch.gather(self.source, 1, columns)
            columns = torch.where(values != 0, columns, torch.zeros_like(columns))
            index_dtype = torch.int16 if self.source.shape[1] <= 1 << 15 else torch.int32
            self._nonzeros = (columns.to(index_dtype), values.contiguous())
        return self._nonzeros


@dataclass(frozen=True)
class IndexedRows:
    """The feature rows ``gatherer.source[index]`` of R runs (index (R, B)), not copied.

    Linear kernels read them through ``source`` and ``index``; anything else calls
    :meth:`gathered` for the (R, B, d) tensor.
    """

    gatherer: RowGatherer
    index: torch.Tensor

    @property
    def source(self) -> torch.Tensor:
        return self.gatherer.source

    @property
    def shape(self) -> torch.Size:
        return torch.Size((*self.index.shape, self.source.shape[-1]))

    @property
    def device(self) -> torch.device:
        return self.source.device

    def gathered(self) -> torch.Tensor:
        """The rows as one (R, B, d) tensor (a view of the gatherer's reused buffer)."""
        return self.gatherer.gather(self.index)

    def norms(self) -> torch.Tensor:
        """l2 norm (R, B) of every row."""
        return batch_values(self.gatherer.norms(), self.index)


def batch_values(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values[index]`` for per-example ``values`` (n, ...) and batch indices ``index`` of any
    shape (labels, attributes, cells of the sampled examples), by ``index_select`` on the
    flattened index: the same values, faster than advanced indexing for batches of this size
    (BENCHMARKS.md; torch's index kernel parallelises this small copy)."""
    picked = torch.index_select(values, 0, index.reshape(-1))
    return picked.view(*index.shape, *values.shape[1:])


def compact_codes(codes: torch.Tensor) -> torch.Tensor:
    """Integer codes (labels, attributes, cells; non-negative) in the narrowest integer dtype
    that holds them (int8, int16, int32, else unchanged): the same values, for compiled
    kernels that read them per sampled example. Sampled examples are read at random, and
    per-example tables that stay in cache are read faster (BENCHMARKS.md)."""
    if codes.numel() and int(codes.min()) < 0:
        raise ValueError("compact_codes expects non-negative integer codes")
    largest = int(codes.max()) if codes.numel() else 0
    for dtype in (torch.int8, torch.int16, torch.int32):
        if largest <= torch.iinfo(dtype).max:
            return codes.to(dtype)
    return codes


def as_tensor(rows: torch.Tensor | IndexedRows) -> torch.Tensor:
    """``rows`` as one tensor, for code that cannot read :class:`IndexedRows` in place."""
    return rows.gathered() if isinstance(rows, IndexedRows) else rows
