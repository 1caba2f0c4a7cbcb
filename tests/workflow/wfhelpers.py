"""Helpers to run the real Snakefile in a scratch copy of the workflow."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def copy_workflow(dest: Path, papers: bool = True) -> Path:
    """Copy Snakefile, workflow/ (and papers/) into ``dest`` so results land outside the repo,
    with the top-level ``profiles`` link through which Snakemake finds the default profile."""
    shutil.copy(REPO / "Snakefile", dest / "Snakefile")
    (dest / "profiles").symlink_to((REPO / "profiles").readlink())
    shutil.copytree(REPO / "workflow", dest / "workflow")
    shutil.copytree(REPO / "envs", dest / "envs")
    if papers:
        shutil.copytree(REPO / "papers", dest / "papers")
    return dest


def run_snakemake(workdir: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """``snakemake`` in ``workdir`` (its own Snakefile and default profile), output captured."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--directory", str(workdir),
         "--snakefile", str(workdir / "Snakefile"), *args],
        cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env,
    )


def planned_outputs(result: subprocess.CompletedProcess) -> set[str]:
    """The output paths a successful ``snakemake -n`` (:func:`run_snakemake`) planned."""
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout + result.stderr
    return {path for line in re.findall(r"^\s*output: (.*)$", out, flags=re.M)
            for path in line.split(", ")}
