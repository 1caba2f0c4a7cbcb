"""Snakemake adapter: rule table -> dpminimax.api.make_table."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.make_table(snakemake.input[0], snakemake.output[0])
