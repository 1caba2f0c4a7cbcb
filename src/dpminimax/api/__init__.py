"""The only functions the workflow scripts call: prepare, train, attack, aggregate, draw.

Every function reads and writes files (atomically) so that a Snakemake rule, ``dpminimax rerun``
and a notebook all go through the same code. The training side, by stage (:mod:`.training`,
:mod:`.tuning`, :mod:`.attacks`, with :mod:`.model_io`: torch, the algorithms, the data), and
the reporting side (:mod:`.reporting`: pandas, matplotlib) load on first use, so a report job,
one of hundreds in a grid, does not pay for torch at start-up. (The stage modules are not named
after the functions ``train``, ``tune``, ``attack``: an imported submodule would shadow them.)
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Iterator
from pathlib import Path

from dpminimax.plugins import load_plugins

#: Public name -> the submodule that defines it.
_SIDES = {
    **dict.fromkeys(("NonFiniteResultError", "prepare_dataset", "set_threads", "train"),
                    "training"),
    **dict.fromkeys(("select_configs", "tune"), "tuning"),
    **dict.fromkeys(("attack", "audit", "leak", "lira"), "attacks"),
    **dict.fromkeys(("aggregate", "make_claims_table", "make_experiment_table", "make_figure",
                     "make_lira_report", "make_notebook", "make_table", "report_status"),
                    "reporting"),
}


@contextlib.contextmanager
def log_to(path: str | Path | None) -> Iterator[None]:
    """Send this process's log records, stdout and stderr (tqdm bars) to ``path``."""
    if path is None:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", buffering=1) as stream:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
                yield
        finally:
            root.removeHandler(handler)


def __getattr__(name: str):
    if name in _SIDES:
        load_plugins()  # a paper's methods, problems and figures, before any name is looked up
        return getattr(importlib.import_module(f"dpminimax.api.{_SIDES[name]}"), name)
    raise AttributeError(f"module 'dpminimax.api' has no attribute {name!r}")


__all__ = ["log_to", *sorted(_SIDES)]
