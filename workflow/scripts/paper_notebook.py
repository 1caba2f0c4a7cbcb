"""Snakemake adapter: rule notebook -> dpminimax.api.make_notebook."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.make_notebook(
        snakemake.input.spec,
        snakemake.output.html,
        notebook_out=snakemake.output.notebook,
        reported=snakemake.input.reported or None,
        claims=bool(snakemake.input.claims),
        experiments=snakemake.params.experiments,
    )
