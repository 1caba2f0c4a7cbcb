"""Snakemake adapter: rule lira_report -> dpminimax.api.make_lira_report."""

from dpminimax import api

with api.log_to(snakemake.log[0]):
    api.make_lira_report(snakemake.input.metrics, snakemake.input.roc, snakemake.output.csv,
                         [snakemake.output.pdf, snakemake.output.png])
