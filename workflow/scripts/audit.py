"""Snakemake adapter: rule audit -> dpminimax.api.audit with the paper's audit: settings."""

from pathlib import Path

from dpminimax import api

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    api.audit(snakemake.params.settings, Path(snakemake.input.arrays).parent,
              snakemake.output.csv, [snakemake.output.pdf, snakemake.output.png])
