"""Tabular datasets declared in YAML (``docs/datasets.md``): one generic loader and sample writer.

A declaration names the canonical files (URL, sha256), their format, the label and sensitive
rules, the feature columns and row filters; :func:`spec_from_declaration` turns it into a
:class:`~dpminimax.data.schema.DatasetSpec` whose loader returns the same
:class:`~dpminimax.data.schema.TabularTable` as the built-in loaders, so the shared encoding
(:mod:`~dpminimax.data.tabular`) applies unchanged. Shipped declarations live in ``declared/``;
users add theirs in the colon-separated directories of ``$DPMINIMAX_DATASETS``. A file with
``sha256: null`` is never trusted: it must be pinned first (``dpminimax data hash FILE``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from dpminimax.data.checksum import file_digest
from dpminimax.data.errors import ChecksumMismatchError, DataError
from dpminimax.data.schema import CanonicalFile, DatasetSpec, TabularTable

SHIPPED_DIR = Path(__file__).resolve().parent / "declared"
ENV_VAR = "DPMINIMAX_DATASETS"
REQUIRED = ("name", "files", "format", "label", "sensitive")


class _Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2 booleans: only true/false (``yes``, ``no``, ``on``, ``off`` stay strings)."""


_BOOL = "tag:yaml.org,2002:bool"
_Yaml12Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != _BOOL]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Yaml12Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


class DeclarationError(DataError):
    """A YAML dataset declaration that is malformed (the message names the file)."""


def declaration_dirs() -> list[Path]:
    """The shipped directory followed by the directories of ``$DPMINIMAX_DATASETS``."""
    extra = [Path(d) for d in os.environ.get(ENV_VAR, "").split(os.pathsep) if d]
    return [SHIPPED_DIR, *extra]


def read_declaration(path: Path) -> dict[str, Any]:
    """Parse and check one YAML declaration; its path is kept under ``"_path"``."""
    decl = yaml.load(Path(path).read_text(), Loader=_Yaml12Loader)  # noqa: S506
    if not isinstance(decl, dict):
        raise DeclarationError(f"{path}: a dataset declaration must be a YAML mapping")
    missing = [key for key in REQUIRED if key not in decl]
    if missing:
        raise DeclarationError(f"{path}: missing keys {missing}")
    fmt = decl["format"]
    if not fmt.get("header", True) and not fmt.get("columns"):
        raise DeclarationError(f"{path}: format.columns is required when header is false")
    for rule in ("label", "sensitive"):
        if "column" not in decl[rule]:
            raise DeclarationError(f"{path}: {rule}.column is required")
    decl["_path"] = Path(path).resolve()
    return decl


def find_declarations() -> dict[str, dict[str, Any]]:
    """Every declaration on the search path by name (a user's file overrides a shipped one)."""
    found: dict[str, dict[str, Any]] = {}
    for directory in declaration_dirs():
        for path in sorted(directory.glob("*.yaml")) if directory.is_dir() else ():
            decl = read_declaration(path)
            found[decl["name"]] = decl
    return found


def _unpinned(url: str, decl_path: Path):
    def refuse(path: Path) -> None:
        raise ChecksumMismatchError(
            f"{path}: not pinned: the declaration {decl_path} has sha256: null, so no copy of "
            f"this file is trusted. Check that it is the canonical file ({url}), then run "
            f"`dpminimax data hash {path}` and paste the sha256 into the declaration (or into "
            f"a copy of it in a directory of ${ENV_VAR}).")
    return refuse


def canonical_files(decl: Mapping[str, Any]) -> tuple[CanonicalFile, ...]:
    """The declared files; an unpinned one gets a ``content_check`` that refuses it."""
    return tuple(
        CanonicalFile(f["filename"], f["url"], f.get("sha256"),
                      content_check=None if f.get("sha256") else _unpinned(f["url"],
                                                                           decl["_path"]))
        for f in decl["files"])


def _separator(fmt: Mapping[str, Any]) -> str:
    delimiter = fmt.get("delimiter", ",")
    return r"\s+" if delimiter == "whitespace" else delimiter


def read_declared_file(path: Path, decl: Mapping[str, Any]) -> pd.DataFrame:
    """One declared file as a frame (columns named by ``format.columns`` or the header)."""
    fmt = decl["format"]
    header = fmt.get("header", True)
    frame = pd.read_csv(path, sep=_separator(fmt), header=0 if header else None,
                        names=None if header else fmt["columns"], skipinitialspace=True,
                        na_values=fmt.get("na_values", []), keep_default_na=False)
    wanted = fmt.get("columns") or []
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    return frame


def _mask(column: pd.Series, rule: Mapping[str, Any]) -> pd.Series:
    """Rows kept by one filter rule: ``in``, ``not_in``, ``min``, ``max`` (inclusive)."""
    keep = pd.Series(True, index=column.index)
    if "in" in rule:
        keep &= column.isin(rule["in"])
    if "not_in" in rule:
        keep &= ~column.isin(rule["not_in"])
    if "min" in rule:
        keep &= column >= rule["min"]
    if "max" in rule:
        keep &= column <= rule["max"]
    return keep


def binary_rule(column: pd.Series, rule: Mapping[str, Any]) -> np.ndarray:
    """1 where ``column`` is in ``rule["positive"]`` or ``>= rule["threshold"]``, else 0."""
    if "positive" in rule:
        return column.isin(rule["positive"]).to_numpy(np.int64)
    if "threshold" in rule:
        return (column >= rule["threshold"]).to_numpy(np.int64)
    raise ValueError(f"rule for {column.name!r} needs 'positive', 'threshold' or 'groups'")


def group_codes(column: pd.Series, rule: Mapping[str, Any]) -> tuple[np.ndarray, list[str]]:
    """Sensitive groups: ``groups`` maps raw values to names (order: ``names`` or first seen),
    else the binary rule with ``names`` [negative, positive]."""
    if "groups" in rule:
        mapping = {k: str(v) for k, v in rule["groups"].items()}
        names = list(rule.get("names") or dict.fromkeys(mapping.values()))
        labels = column.map(mapping)
        if labels.isna().any():
            raise ValueError(f"column {column.name!r}: values without a group "
                             f"{sorted(map(str, column[labels.isna()].unique()))}")
        return pd.Categorical(labels, categories=names).codes.astype(np.int64), names
    return binary_rule(column, rule), list(rule.get("names", ["0", "1"]))


def load_declared(decl: Mapping[str, Any], paths: Mapping[str, Path]) -> TabularTable:
    """Read, concatenate and filter the declared files; code label and sensitive attribute."""
    frame = pd.concat([read_declared_file(paths[f["filename"]], decl) for f in decl["files"]],
                      ignore_index=True)
    label, sensitive = decl["label"], decl["sensitive"]
    numeric, categorical = list(decl.get("numeric", [])), list(decl.get("categorical", []))
    for rule in decl.get("filters", []):
        frame = frame[_mask(frame[rule["column"]], rule)]
    used = [*numeric, *categorical, label["column"], sensitive["column"]]
    frame = frame.dropna(subset=used).reset_index(drop=True)
    s, group_names = group_codes(frame[sensitive["column"]], sensitive)
    return TabularTable(
        frame=frame, numeric=numeric, categorical=categorical,
        y=binary_rule(frame[label["column"]], label),
        s=s, label_names=list(label.get("names", ["0", "1"])), group_names=group_names,
    )


def write_declared_sample(decl: Mapping[str, Any], directory: Path, n_rows: int,
                          seed: int) -> list[Path]:
    """Random rows in the declared format: each column drawn from ``sample`` (a list of values
    or ``{low, high}`` integers), written with the declared delimiter and header."""
    rng = np.random.default_rng(seed)
    fmt, sample = decl["format"], decl.get("sample", {})
    columns = fmt.get("columns") or list(sample)
    missing = [c for c in columns if c not in sample]
    if missing:
        raise DeclarationError(f"{decl['_path']}: sample: has no values for {missing}")
    written = []
    for file in decl["files"]:
        data = {}
        for name in columns:
            draw = sample[name]
            data[name] = (rng.integers(draw["low"], draw["high"] + 1, n_rows)
                          if isinstance(draw, dict) else rng.choice(np.array(draw, dtype=object),
                                                                    n_rows))
        path = Path(directory) / file["filename"]
        path.parent.mkdir(parents=True, exist_ok=True)
        delimiter = fmt.get("delimiter", ",")
        pd.DataFrame(data).to_csv(path, sep=" " if delimiter == "whitespace" else delimiter,
                                  header=fmt.get("header", True), index=False)
        written.append(path)
    return written


def describe(decl: Mapping[str, Any]) -> str:
    """The ``preprocessing`` text of a declaration (its own text, or one generated from it)."""
    if decl.get("preprocessing"):
        return str(decl["preprocessing"]).strip()
    label = decl["label"]
    rule = label.get("positive", f">= {label.get('threshold')}")
    return (f"declared in {decl['_path'].name}: label {label['column']} {rule} -> 1; filters "
            f"{decl.get('filters', [])}; z-score {decl.get('numeric', [])} (train statistics); "
            f"one-hot {decl.get('categorical', [])}; {decl['sensitive']['column']} is not a "
            "feature")


def spec_from_declaration(decl: Mapping[str, Any]) -> DatasetSpec:
    """The registry entry of a declaration (loader and stand-in writer bound to it)."""
    sensitive = decl["sensitive"]
    return DatasetSpec(
        name=decl["name"], kind="tabular", files=canonical_files(decl),
        citation=str(decl.get("citation", "")).strip(), licence=str(decl.get("licence", "")),
        sensitive=str(sensitive.get("description", sensitive["column"])),
        preprocessing=describe(decl),
        loader=functools.partial(load_declared, decl),
        sample_writer=functools.partial(write_declared_sample, decl),
        test_fraction=float(decl.get("test_fraction", 0.25)),
        declaration=decl["_path"],
    )


def pin_snippet(path: str | Path) -> str:
    """The ``sha256`` and ``size`` lines pinning ``path``, to paste under its ``files:`` entry."""
    path = Path(path)
    return (f"# {path.name}: paste under its entry in the declaration's files:\n"
            f"    sha256: {file_digest(path)}\n    size: {path.stat().st_size}\n")
