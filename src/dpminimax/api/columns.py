"""The columns that identify one run in every results table."""

RUN_COLUMNS = ("paper", "experiment", "dataset", "method", "epsilon", "delta", "seed", "run_id")
