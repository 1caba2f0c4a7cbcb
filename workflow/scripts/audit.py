"""Snakemake adapter: rule audit -> dpminimax.api.audit with the paper's audit: settings."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from pathlib import Path  # noqa: E402

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    api.audit(snakemake.params.settings, Path(snakemake.input.arrays).parent,
              snakemake.output.csv, [snakemake.output.pdf, snakemake.output.png])
