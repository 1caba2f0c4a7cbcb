"""Snakemake adapter: rule lira_report -> dpminimax.api.make_lira_report."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.make_lira_report(snakemake.input.metrics, snakemake.input.roc, snakemake.output.csv,
                         [snakemake.output.pdf, snakemake.output.png])
