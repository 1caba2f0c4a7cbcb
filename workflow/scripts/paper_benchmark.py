"""Snakemake adapter: rule paper_benchmark -> the paper's benchmark in dpminimax.bench (so far
RaCO-DP's Table 2), with its settings from the paper's experiments.yaml."""

from dpminimax.threads import reserve_threads

reserve_threads(snakemake.threads)  # before anything imports numba (dpminimax.threads)

from pathlib import Path  # noqa: E402

from dpminimax import api  # noqa: E402
from dpminimax.bench import racodp  # noqa: E402

BENCHMARKS = {("racodp", "table2"): racodp.write_table2}
paper, bench = snakemake.wildcards.paper, snakemake.wildcards.bench
experiments = Path(__file__).resolve().parents[2] / "papers" / paper / "experiments.yaml"

with api.log_to(snakemake.log[0]):
    api.set_threads(snakemake.threads)
    BENCHMARKS[paper, bench](
        {name: Path(path).parent for name, path in snakemake.input.items()},
        snakemake.output[0],
        experiments_file=experiments,
    )
