"""Each paper README opens with a map of its files (issue #41 item 4): at most 15 lines, near
the top, and every path it names exists (a glob matches at least one file), so the map cannot
rot silently when a module moves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ("racodp", "dpfermi", "bilevel", "byoa", "dpdro")


def _map(paper: str) -> list[str]:
    lines = (ROOT / "papers" / paper / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("## Files (map)")
    assert start < 20, f"{paper}: the map is not at the top of the README (line {start + 1})"
    body = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        body.append(line)
    return [line for line in body if line.strip()]


@pytest.mark.parametrize("paper", PAPERS)
def test_the_map_is_short_and_every_path_exists(paper):
    entries = _map(paper)
    assert 0 < len(entries) <= 15
    paths = [token for line in entries for token in re.findall(r"`([^`]+)`", line)
             if "/" in token]
    assert paths, f"{paper}: the map names no file"
    missing = [p for p in paths if not any(ROOT.glob(p.rstrip("/")))]
    assert not missing, f"{paper}: the map names paths that do not exist: {missing}"
    assert any(p.startswith("src/dpminimax/algorithms/") for p in paths)
    assert f"papers/{paper}/claims.yaml" in paths
