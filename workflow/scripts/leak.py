"""Snakemake adapter: rule leak -> dpminimax.api.leak with the paper's leak: settings."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    api.leak(snakemake.params.settings, snakemake.output.csv,
             [snakemake.output.pdf, snakemake.output.png], snakemake.output.claims)
