"""Snakemake adapter: rule benchmark -> dpminimax.api.benchmark_table2 (the only one so far)."""

from dpminimax.threads import reserve_threads

reserve_threads(snakemake.threads)  # before anything imports numba (dpminimax.threads)

from pathlib import Path  # noqa: E402

from dpminimax import api  # noqa: E402

BENCHMARKS = {"table2": api.benchmark_table2}

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    BENCHMARKS[snakemake.wildcards.bench](
        {name: Path(path).parent for name, path in snakemake.input.items()},
        snakemake.output[0],
    )
