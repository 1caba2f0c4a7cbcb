"""Snakemake adapter: rule claims -> dpminimax.api.make_claims_table."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from dpminimax import api  # noqa: E402

with api.log_to(snakemake.log[0]):
    api.make_claims_table(snakemake.input.claims, snakemake.input.runs, snakemake.output.csv,
                          snakemake.output.markdown, measured_paths=snakemake.input.measured,
                          data_meta_paths=snakemake.input.data,
                          reported=snakemake.input.reported or None)
