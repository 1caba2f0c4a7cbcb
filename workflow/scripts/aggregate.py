"""Snakemake adapter: rule aggregate -> dpminimax.api.aggregate."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.aggregate(snakemake.input.metrics, snakemake.input.attacks, snakemake.output[0])
