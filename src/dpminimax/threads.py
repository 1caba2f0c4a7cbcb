"""A job's thread budget, fixed before numba starts its thread pool.

numba sizes its pool once, from ``NUMBA_NUM_THREADS`` as read when numba is imported (default:
every core); ``numba.set_num_threads`` can later only mask threads out, and the masked pool
threads still take CPU time. The workflow runs one-thread jobs side by side
(``workflow/profiles/default``), and with numba's default pool they fought over the cores,
each step many times slower than with a one-thread pool (timings: BENCHMARKS.md, *Timings
moved from docstrings*). So the workflow's job scripts call :func:`reserve_threads` before anything
imports numba; torch's threads are set afterwards (:func:`dpminimax.api.set_threads`).

This module imports nothing heavy, so that it can run first.
"""

from __future__ import annotations

import os
import sys


def reserve_threads(threads: int) -> int:
    """Size numba's thread pool for a job given ``threads`` cores (at least 1) and return the
    count. Must run before numba is imported: afterwards the pool size is fixed, so this
    raises instead of leaving a pool that oversubscribes the job's cores, unless the pool
    already has this size (a job forked from a job server, :mod:`dpminimax.jobserver`)."""
    threads = max(1, int(threads))
    if "numba" in sys.modules:
        if sys.modules["numba"].config.NUMBA_NUM_THREADS == threads:
            os.environ["NUMBA_NUM_THREADS"] = str(threads)  # numba re-reads it to compile
            return threads  # a fork of a job server (dpminimax.jobserver) sized for this job
        raise RuntimeError(
            "reserve_threads must run before numba is imported (numba sizes its thread pool "
            "once, at import); call it first in the job script")
    os.environ["NUMBA_NUM_THREADS"] = str(threads)
    return threads
