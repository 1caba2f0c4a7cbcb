"""The scorecard (issue 36, item 6): counts per verdict, the claims.md header and the README
blocks regenerated from the reference claims tables."""

import json
from pathlib import Path

import pandas as pd
import pytest

from dpminimax.cli import main
from dpminimax.report.claims.scorecard import (
    BEGIN,
    END,
    readme_block,
    render_scorecard,
    scorecard,
    sync_readmes,
)

ROOT = Path(__file__).resolve().parents[4]
VERDICTS = ["reproduced", "reproduced", "not reproduced", "inconclusive", "uninformative",
            "uninformative", "uninformative", "holds", "holds", "fails", "measured",
            "qualitative", "not run: data unavailable", "not run: no matching runs"]


def _table(verdicts=VERDICTS):
    return pd.DataFrame({"id": [f"c{i}" for i in range(len(verdicts))], "verdict": verdicts})


def test_scorecard_counts_every_verdict_once():
    counts = scorecard(_table())
    assert counts == {"reproduced": 2, "not reproduced": 1, "inconclusive": 1,
                      "uninformative": 3, "consistency holds": 2, "consistency fails": 1,
                      "diagnostic": 1, "qualitative": 1, "not run": 2, "claims": 14}
    assert sum(v for k, v in counts.items() if k != "claims") == counts["claims"]
    with pytest.raises(ValueError, match="no scorecard column counts: \\['reproduced-ish'\\]"):
        scorecard(_table(["reproduced-ish"]))


def test_render_one_and_several():
    one = render_scorecard(scorecard(_table()))
    assert "| 2 | 1 | 1 | 3 | 2 | 1 | 1 | 1 | 2 | 14 |" in one
    several = render_scorecard({"a": scorecard(_table()), "b": scorecard(_table(["holds"]))})
    assert "| `a` | 2 | 1 | 1 | 3 |" in several
    assert "| `b` | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 1 |" in several


def _repo(tmp_path, papers=("p1", "p2")):
    (tmp_path / "README.md").write_text("# top\n\nintro\n", encoding="utf-8")
    for index, paper in enumerate(papers):
        folder = tmp_path / "papers" / paper
        (folder / "reference").mkdir(parents=True)
        _table(VERDICTS[index:]).to_csv(folder / "reference" / "claims_default.csv", index=False)
        (folder / "README.md").write_text(f"# {paper}\n\ntext\n{BEGIN}\nold\n{END}\nmore\n",
                                          encoding="utf-8")
    return tmp_path


def test_readme_blocks_are_what_the_code_generates_from_the_csv(tmp_path):
    root = _repo(tmp_path)
    assert sorted(p.relative_to(root).as_posix() for p in sync_readmes(root)) == [
        "README.md", "papers/p1/README.md", "papers/p2/README.md"]
    p1 = (root / "papers" / "p1" / "README.md").read_text(encoding="utf-8")
    card = scorecard(pd.read_csv(root / "papers" / "p1" / "reference" / "claims_default.csv"))
    assert p1 == f"# p1\n\ntext\n{readme_block({'p1': card})}\nmore\n"
    top = (root / "README.md").read_text(encoding="utf-8")
    assert top.startswith("# top\n\n" + BEGIN) and top.endswith(END + "\n\nintro\n")
    assert "| `p1` | 2 |" in top and "| `p2` | 1 |" in top
    assert sync_readmes(root, check=True) == []  # regenerating changes nothing
    assert sync_readmes(root) == []


def test_check_exits_non_zero_on_a_stale_block(tmp_path, capsys):
    root = _repo(tmp_path)
    sync_readmes(root)
    assert main(["scorecard", "--root", str(root), "--check"]) == 0
    assert json.loads(capsys.readouterr().out) == {"stale": []}
    table = root / "papers" / "p2" / "reference" / "claims_default.csv"
    _table(["fails"] * 3).to_csv(table, index=False)  # a new default run's table
    before = (root / "papers" / "p2" / "README.md").read_text(encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main(["scorecard", "--root", str(root), "--check"])
    assert exited.value.code == 1
    assert sorted(json.loads(capsys.readouterr().out)["stale"]) == sorted(
        str(root / p) for p in ("README.md", "papers/p2/README.md"))
    assert (root / "papers" / "p2" / "README.md").read_text(encoding="utf-8") == before
    assert main(["scorecard", "--root", str(root)]) == 0
    assert "| 0 | 0 | 0 | 0 | 0 | 3 | 0 | 0 | 0 | 3 |" in (
        root / "papers" / "p2" / "README.md").read_text(encoding="utf-8")


def test_the_repositorys_readme_scorecards_are_current():
    """Once the reference tables are committed, every README block must match them."""
    assert sync_readmes(ROOT, check=True) == []
