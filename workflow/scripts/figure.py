"""Snakemake adapter: rule figure -> dpminimax.api.make_figure."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.make_figure(
        snakemake.input.runs,
        snakemake.wildcards.figure,
        [snakemake.output.pdf, snakemake.output.png],
        experiment=snakemake.wildcards.experiment,
        reported=snakemake.input.reported or None,
    )
