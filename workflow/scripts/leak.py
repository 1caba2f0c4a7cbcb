"""Snakemake adapter: rule leak -> dpminimax.api.leak with the paper's leak: settings."""

from dpminimax import api

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    api.leak(snakemake.params.settings, snakemake.output.csv,
             [snakemake.output.pdf, snakemake.output.png], snakemake.output.claims)
