"""What ``snakemake --report`` covers after a partial or failed run (issue 40 item 10)."""

import sys

from dpminimax.api import log_to as dpminimax_log_to

#: Whether this invocation only builds the report (``snakemake --report [file]``, not
#: ``--report-after-run``). Snakemake tells a Snakefile nothing of it, so the command line is
#: read: a report then covers the planned outputs that exist (rule all asks for those only)
#: and the status page says what is missing or stale, instead of failing on the first output
#: a partial or failed run did not write.
REPORTING = (any(arg == "--report" or arg.startswith("--report=") for arg in sys.argv)
             and "--report-after-run" not in sys.argv)
STATUS_PAGE = f"{RESULTS}/report_status.html"


def _drawn_from_runs(paper, target):
    """Whether ``target`` (a planned output of ``paper``) is drawn from its runs.parquet: the
    summary, claims, notebook and every experiment's figures and tables."""
    parts = Path(target).relative_to(f"{RESULTS}/{paper}").parts
    return (parts in (("tables", "summary.csv"), ("tables", "claims.csv"), ("report.html",))
            or (len(parts) == 3 and parts[0] in ("figures", "tables")))


def write_report_status():
    """The status page of the configured plan (dpminimax.api.report_status) and its table."""
    from dpminimax.api import report_status

    targets = all_targets()
    requires, runs = {}, {}
    for paper in PAPERS:
        mine = [t for t in targets if t.startswith(f"{RESULTS}/{paper}/")]
        # A job in the report's DAG must have its reported outputs: the notebook reads the
        # summary, claims and experiment tables, the claims read the paper's measured values.
        requires[f"{RESULTS}/{paper}/tables/claims.csv"] = measured_outputs(paper)
        requires[f"{RESULTS}/{paper}/report.html"] = [
            t for t in mine if t.endswith(".csv") and _drawn_from_runs(paper, t)
        ] + measured_outputs(paper)
        runs[f"{RESULTS}/{paper}/runs.parquet"] = (
            [t for t in mine if _drawn_from_runs(paper, t)],
            {f"{job.train_dir}/metrics.parquet": job.run_config(TRAIN_CODE)
             for job in paper_jobs(paper)})
    return report_status(targets, requires, runs, TRAIN_CODE, STATUS_PAGE)


def report_targets():
    """What ``snakemake --report`` reports: the planned outputs that exist with their report
    inputs, and the status page (written now; rule report_status writes it on request)."""
    table = write_report_status()
    return table.loc[table["in_report"], "output"].tolist() + [STATUS_PAGE]
