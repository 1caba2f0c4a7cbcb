"""Snakemake adapter: rule lira -> dpminimax.api.lira with the paper's lira: settings."""

from pathlib import Path

from dpminimax import api

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    api.lira(snakemake.params.settings, Path(snakemake.input.arrays).parent,
             snakemake.wildcards.eps, snakemake.output.metrics, snakemake.output.roc)
