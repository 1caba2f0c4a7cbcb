"""Workflow benchmark: how long ``snakemake -n`` takes to build the whole DAG at a scale."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


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
