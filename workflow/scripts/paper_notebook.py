"""Snakemake adapter: rule notebook -> dpminimax.api.make_notebook."""

from dpminimax import api

with api.log_to(snakemake.log[0]):
    api.make_notebook(
        snakemake.input.spec,
        snakemake.output.html,
        notebook_out=snakemake.output.notebook,
        reported=snakemake.input.reported or None,
        claims=bool(snakemake.input.claims),
        experiments=snakemake.params.experiments,
    )
