"""A job's numba thread pool is sized before numba starts it (dpminimax.threads)."""

import subprocess
import sys

import pytest

from dpminimax.threads import reserve_threads

FRESH_JOB = """
from dpminimax.threads import reserve_threads
count = reserve_threads({threads})
import numba
import numpy as np

@numba.njit(parallel=True)
def threads_used(n):
    seen = np.zeros(64, np.int64)
    for i in numba.prange(n):
        seen[numba.get_thread_id()] = 1
    return seen.sum()

print(count, numba.config.NUMBA_NUM_THREADS, numba.get_num_threads(), threads_used(10_000))
"""


@pytest.mark.parametrize(("threads", "expected"), [(1, "1 1 1 1"), (0, "1 1 1 1"),
                                                    (2, "2 2 2")])
def test_a_fresh_job_gets_a_pool_of_its_threads(threads, expected):
    out = subprocess.run([sys.executable, "-c", FRESH_JOB.format(threads=threads)],
                         capture_output=True, text=True, check=True).stdout.split()
    assert " ".join(out).startswith(expected), out


def test_refuses_once_numba_has_sized_its_pool():
    import numba  # (this test process has numba already)

    with pytest.raises(RuntimeError, match="before numba is imported"):
        reserve_threads(numba.config.NUMBA_NUM_THREADS + 1)


def test_accepts_a_pool_already_of_the_jobs_size(monkeypatch):
    """A job forked from a job server whose numba was imported for the job's threads."""
    import numba

    size = numba.config.NUMBA_NUM_THREADS
    monkeypatch.setenv("NUMBA_NUM_THREADS", str(size))  # restored after: reserve_threads sets it
    assert reserve_threads(size) == size


KEEPS_TORCH_THREADS = """
import torch
torch.set_num_threads(1)
from dpminimax.kernels.rowwise import row_softmax
row_softmax(torch.randn(64, 3))       # starts numba's pool (every core by default)
import numba
print(torch.get_num_threads(), numba.get_num_threads())
"""


def test_starting_the_compiled_loops_keeps_torchs_thread_count():
    """numba's OpenMP pool, started on first use, used to reset torch's thread count to the
    pool's size; a job told to use one thread then ran torch on every core."""
    out = subprocess.run([sys.executable, "-c", KEEPS_TORCH_THREADS], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["1", "1"]
