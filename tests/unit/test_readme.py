"""The README's opening states no measured numbers of its own (issue 40 item 12): times and job
counts live in BENCHMARKS.md, where they are measured, so they cannot drift apart; it points to
the per-paper report pages and says how a CPU-only user installs the CPU build of torch."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
OPENING = README.split("\n## ", 1)[0]


def test_the_opening_measures_nothing_itself():
    measured = re.findall(r"\d[\d.,]*\s*(?:to\s+\d+\s*)?(?:minutes|min\b|h\b|hours|jobs)",
                          OPENING)
    assert measured == [], measured
    assert "BENCHMARKS.md" in OPENING


def test_the_opening_names_the_report_pages_and_the_cpu_install():
    assert "results/<paper>/report.html" in OPENING
    assert "--index-url https://download.pytorch.org/whl/cpu" in " ".join(OPENING.split())
