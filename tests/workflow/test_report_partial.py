"""``snakemake --report`` after a partial or failed run (issue 40 item 10): the report covers
the planned outputs that exist, whatever ``--config`` made them, and its status page lists what
is missing or stale, instead of failing on the first output the run did not write."""

from __future__ import annotations

import os
import re

import pandas as pd
from wfhelpers import run_snakemake

PNG = bytes.fromhex(  # a 1 x 1 PNG: the report only embeds the figure
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6300010000050001"
    "0d0a2db40000000049454e44ae426082")


def test_report_after_a_partial_failed_run_covers_what_exists(workflow_copy):
    root = workflow_copy
    # What `--config papers=[baselines]` left when a training job failed: the runs and figures
    # of an earlier run (older code), no training results of this plan, nothing of the others.
    paper = root / "results/baselines"
    figure = paper / "figures/dpsgd_lr/accuracy_vs_epsilon.png"
    figure.parent.mkdir(parents=True)
    figure.write_bytes(PNG)
    (paper / "tables").mkdir()
    runs = pd.DataFrame({"method": ["dp_sgd"], "code_version": ["0000000000000000"]})
    runs.to_parquet(paper / "runs.parquet")
    (paper / "tables/summary.csv").write_text("method,test_accuracy_mean\ndp_sgd,0.8\n")
    os.utime(figure, (1e9, 1e9))  # drawn before the runs it shows

    result = run_snakemake(root, "--report", "report.html",
                           "--configfile", "workflow/config/smoke.yaml", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    html = (root / "report.html").read_text(errors="replace")
    assert "accuracy_vs_epsilon.png" in html and "summary.csv" in html
    assert "report_status.html" in html

    page = (root / "results/report_status.html").read_text()
    rows = dict(re.findall(r"<tr><td>([^<]+)</td><td>(missing|stale)</td>", page))
    assert rows["results/baselines/tables/summary.csv"] == "stale"
    assert rows["results/baselines/figures/dpsgd_lr/accuracy_vs_epsilon.png"] == "stale"
    assert rows["results/baselines/report.html"] == "missing"
    assert rows["results/racodp/tables/summary.csv"] == "missing"  # never run
    assert "planned training jobs have no results" in page
    assert not (root / "results/racodp").exists()  # a report runs nothing
