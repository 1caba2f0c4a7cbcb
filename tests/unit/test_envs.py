"""The conda environments pin exactly the versions CI installs (envs/constraints.txt)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONDA_NAMES = {"pytorch": "torch"}
TEST_ONLY = {"pytest", "hypothesis", "ruff", "pytest-timeout"}


def _constraints() -> dict[str, str]:
    lines = (ROOT / "envs/constraints.txt").read_text().splitlines()
    return dict(line.split("==") for line in lines if line and not line.startswith("#"))


def _conda_pins(path: Path) -> dict[str, str]:
    pins = {}
    for entry in yaml.safe_load(path.read_text())["dependencies"]:
        specs = entry["pip"] if isinstance(entry, dict) else [entry]
        for spec in specs:
            match = re.fullmatch(r"([A-Za-z0-9_.-]+)==?([0-9][^ ]*)", spec)
            if match and match[1] not in ("python", "pytorch-cuda"):
                pins[CONDA_NAMES.get(match[1], match[1])] = match[2]
    return pins


@pytest.mark.parametrize("env", ["cpu", "cuda"])
def test_conda_env_pins_what_ci_tests(env):
    wanted = {name: version for name, version in _constraints().items()
              if name not in TEST_ONLY}
    assert _conda_pins(ROOT / f"envs/{env}.yaml") == wanted


def test_every_runtime_dependency_is_pinned_for_ci():
    project = (ROOT / "pyproject.toml").read_text()
    block = project[project.index("dependencies = ["):project.index("]", project.index(
        "dependencies = ["))]
    names = {re.match(r"[A-Za-z0-9_.-]+", item.strip().strip('",'))[0].lower()
             for item in block.splitlines()[1:] if item.strip()}
    assert names <= set(_constraints())


def test_ci_installs_with_the_constraints():
    assert "-c envs/constraints.txt" in (ROOT / ".ci/run").read_text()
