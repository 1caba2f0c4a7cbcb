"""The row prefetch compiles for the sparse-row tables and changes no value."""

import numba
import numpy as np
import pytest

from dpminimax.kernels.prefetch import prefetch_row


@numba.njit
def _row_sums_prefetched(table, rows, ahead):
    out = np.zeros(len(rows))
    for b in range(len(rows)):
        if b + ahead < len(rows):
            prefetch_row(table, rows[b + ahead])
        for p in range(table.shape[1]):
            out[b] += float(table[rows[b], p])
    return out


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 13, 40])
def test_prefetched_loop_reads_the_same_values(dtype, width):
    rng = np.random.default_rng(width)
    table = (rng.normal(size=(500, width)) * 100).astype(dtype)
    rows = np.sort(rng.choice(500, size=120, replace=False))
    never = _row_sums_prefetched(table, rows, len(rows))       # the same loop, no prefetch
    np.testing.assert_allclose(never, table[rows].astype(np.float64).sum(axis=1), rtol=1e-12)
    for ahead in (1, 8, 119):
        np.testing.assert_array_equal(_row_sums_prefetched(table, rows, ahead), never)


def test_prefetch_refuses_what_is_not_a_table_row():
    @numba.njit
    def one_dimensional(values):
        prefetch_row(values, 0)

    with pytest.raises(numba.core.errors.TypingError):
        one_dimensional(np.zeros(4))
