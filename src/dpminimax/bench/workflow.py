"""Workflow benchmarks: how long ``snakemake -n`` takes to build the whole DAG at a scale, and
what a job process costs before its work starts, in its own process and handed over to the
job server (:mod:`dpminimax.jobserver`)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: A job's start: the hand-over, then the imports of a training and a reporting job.
JOB_START = """
from dpminimax.jobserver import hand_over
hand_over(1)
from dpminimax.threads import reserve_threads
reserve_threads(1)
import dpminimax.api.training, dpminimax.api.reporting
"""


def time_dry_run(workflow_dir: str | Path = ".", scale: str = "paper", repeats: int = 3) -> dict:
    """Median wall time of ``snakemake -n --config scale=<scale>`` (DAG construction only)."""
    workflow_dir = Path(workflow_dir).resolve()
    if not (workflow_dir / "Snakefile").exists():
        raise FileNotFoundError(f"{workflow_dir}: no Snakefile (run from the repository root)")
    times, jobs = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--config",
             f"scale={scale}"],
            cwd=workflow_dir, capture_output=True, text=True,
        )
        times.append(time.perf_counter() - start)
        if result.returncode != 0:
            raise RuntimeError(f"snakemake -n failed:\n{result.stderr[-2000:]}")
        jobs = _total_jobs(result.stdout + result.stderr)
    times.sort()
    return {"dry_run_seconds_median": times[len(times) // 2], "dry_run_seconds": times,
            "scale": scale, "jobs": jobs}


def _total_jobs(output: str) -> int | None:
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "total" and parts[1].isdigit():
            return int(parts[1])
    return None


def time_job_start(repeats: int = 10) -> dict:
    """Median wall seconds of a job process up to its work (:data:`JOB_START`) run ``repeats``
    times in its own process (``DPMINIMAX_JOBSERVER=0``) and handed over to a job server
    (after the first hand-over, which starts the server and is reported apart)."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "job.py"
        script.write_text(JOB_START)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DPMINIMAX_JOBSERVER")}

        def run(**extra: str) -> float:
            start = time.perf_counter()
            subprocess.run([sys.executable, str(script)], cwd=folder, env={**env, **extra},
                           check=True, capture_output=True)
            return time.perf_counter() - start

        own = [run(DPMINIMAX_JOBSERVER="0") for _ in range(repeats)]
        first = run(DPMINIMAX_JOBSERVER_IDLE="10")
        forked = [run(DPMINIMAX_JOBSERVER_IDLE="10") for _ in range(repeats)]
    return {"own_process_seconds_median": statistics.median(own),
            "handed_over_seconds_median": statistics.median(forked),
            "first_hand_over_seconds": first,
            "own_over_handed_over": statistics.median(own) / statistics.median(forked),
            "repeats": repeats}
