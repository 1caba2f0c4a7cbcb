"""A job's outputs are all new or all absent, whatever step of the writing fails."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from dpminimax import api
from dpminimax.api import training
from dpminimax.atomic import atomic_directory, atomic_path


def test_atomic_directory_replaces_the_whole_directory(tmp_path):
    target = tmp_path / "job"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with atomic_directory(target) as tmp:
        (tmp / "new.txt").write_text("new")
        assert not (target / "new.txt").exists()  # nothing visible before the end
    assert sorted(p.name for p in target.iterdir()) == ["new.txt"]
    assert list(tmp_path.iterdir()) == [target]  # no temporary left behind


def test_a_failure_leaves_the_old_directory_and_no_temporary(tmp_path):
    target = tmp_path / "job"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "new.txt").write_text("half")
        raise RuntimeError("killed")
    assert sorted(p.name for p in target.iterdir()) == ["old.txt"]
    assert list(tmp_path.iterdir()) == [target]


def test_leftovers_of_a_killed_writer_are_removed(tmp_path):
    target = tmp_path / "job"
    target.mkdir()
    (target / ".metrics.parquet.abc.part").write_text("partial")
    (tmp_path / ".job.tmp-dead").mkdir()
    with atomic_directory(target) as tmp:
        (tmp / "a").write_text("a")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job"]
    assert sorted(p.name for p in target.iterdir()) == ["a"]
    with atomic_path(tmp_path / "x.json") as part:
        part.write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job", "x.json"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("data")
    api.prepare_dataset("synthetic-fair", path, max_rows=600)
    return path


CONFIG = {"paper": "p", "experiment": "e", "dataset": "synthetic-fair",
          "method": "dp_sgd_nonprivate", "epsilon": "inf", "delta": 1e-5, "seeds": [0],
          "params": {"lr": 1.0, "batch_size": 64, "epochs": 1}}


@pytest.mark.parametrize("fail_at", ["parquet", "torch.save", "run_config"])
def test_a_crash_at_any_output_keeps_the_previous_job_whole(tmp_path, data_dir, monkeypatch,
                                                           fail_at):
    """A rerun into an existing job directory that dies while writing leaves the previous
    outputs exactly as they were (the rerun of issue #24 left new metrics beside an old model)."""
    out = tmp_path / "job"
    api.train(CONFIG, data_dir, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {"metrics.parquet", "accounting.json", "model.pt", "run_config.json"}

    def boom(*args, **kwargs):
        raise OSError(f"disk full at {fail_at}")

    if fail_at == "parquet":
        monkeypatch.setattr(pd.DataFrame, "to_parquet", boom)
    elif fail_at == "torch.save":
        monkeypatch.setattr(torch, "save", boom)
    else:
        real = training.write_json
        monkeypatch.setattr(training, "write_json", lambda path, obj: boom() if
                            path.name == "run_config.json" else real(path, obj))
    changed = {**CONFIG, "seeds": [1]}
    with pytest.raises(OSError, match="disk full"):
        api.train(changed, data_dir, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job"]

    monkeypatch.undo()
    api.train(changed, data_dir, out)  # and the next run completes the job
    assert json.loads((out / "run_config.json").read_text())["seeds"] == [1]
