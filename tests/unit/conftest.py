"""Fixtures shared by the unit tests."""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import settings

from dpminimax.data import get_dataset_spec, registry, write_canonical_sample
from dpminimax.data.checksum import file_digest
from dpminimax.plugins import load_plugins

load_plugins()  # $DPMINIMAX_PLUGINS: a paper's methods join the parametrized suites (METHODS)

# The examples Hypothesis draws are a function of each test (derandomized), so a run cannot fail
# on a draw nobody has seen; HYPOTHESIS_PROFILE=explore draws fresh ones (and keeps failures).
settings.register_profile("reproducible", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "reproducible"))


@pytest.fixture
def offline_data(tmp_path, monkeypatch):
    """A private cache directory and no download attempts."""
    monkeypatch.setenv("DPMINIMAX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DPMINIMAX_OFFLINE", "1")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """An isolated, offline search path: ``<tmp>/raw`` then ``<tmp>/shared``."""
    for var, value in {"DPMINIMAX_DATA_RAW": tmp_path / "raw",
                       "DPMINIMAX_DATA": tmp_path / "shared",
                       "DPMINIMAX_CACHE": tmp_path / "cache", "DPMINIMAX_OFFLINE": "1"}.items():
        monkeypatch.setenv(var, str(value))
    return tmp_path


@pytest.fixture
def samples(env, monkeypatch):
    """Write a canonical-format sample into the shared directory and pin it by its sha256."""

    def use(name: str, n_rows: int, seed: int = 0):
        spec = get_dataset_spec(name)
        paths = write_canonical_sample(name, env / "shared" / (spec.folder or name), n_rows, seed)
        files = tuple(dataclasses.replace(f, sha256=file_digest(p))
                      for f, p in zip(spec.files, paths, strict=True))
        monkeypatch.setitem(registry.DATASETS, name, dataclasses.replace(spec, files=files))
        return paths

    return use
