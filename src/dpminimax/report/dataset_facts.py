"""Dataset facts a paper states (rows, input features, classes, sensitive groups and their
sizes; DP-FERMI App. F.2.2) read from the prepared data's metadata
(``results/data/<dataset>/meta.json``, :func:`dpminimax.data.storage.save_prepared`): exact
numbers, so their claims declare ``interval: exact``. A stand-in dataset (``standin: true``)
states nothing about the paper's data and gives no facts.

Facts (:func:`dataset_facts`): ``num_features`` (encoded input features), ``num_classes``,
``num_groups``, ``num_rows`` (rows after cleaning, before any ``max_rows`` subsample: the
split's ``n_rows_total``; train plus test rows of a canonical split that is not subsampled)
and, when the split is not subsampled, ``group_rows.<group>`` (train plus test rows of each
sensitive group).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def dataset_facts(record: Mapping[str, Any]) -> dict[str, int]:
    """The facts of one ``meta.json`` record (module docstring); empty for a stand-in."""
    meta = record["meta"]
    if meta.get("standin"):
        return {}
    split, total = meta["split"], meta["split"].get("n_rows_total")
    whole = split.get("max_rows") is None or (total is not None and split["max_rows"] >= total)
    facts = {"num_features": len(record["feature_names"]),
             "num_classes": len(record["label_names"]),
             "num_groups": len(record["group_names"])}
    if total is not None or whole:  # a canonical split without a subsample holds every row
        facts["num_rows"] = int(total if total is not None else meta["n_train"] + meta["n_test"])
    if whole:
        counts = meta["group_counts"]
        facts |= {f"group_rows.{group}": sum(int(counts[part].get(group, 0)) for part in counts)
                  for group in record["group_names"]}
    return facts


def read_dataset_facts(paths: Sequence[str | Path]) -> dict[str, dict[str, int]]:
    """Dataset name -> :func:`dataset_facts` of each ``meta.json`` in ``paths``."""
    records = [json.loads(Path(path).read_text(encoding="utf-8")) for path in paths]
    return {record["name"]: dataset_facts(record) for record in records}


def measured_facts(claims: Sequence[Mapping[str, Any]],
                   facts: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Claim id -> its ``measure.metric`` among the facts of its (single) ``dataset``, for the
    claims that declare ``interval: exact``."""
    measured = {}
    for claim in claims:
        known = facts.get(str(claim.get("dataset")), {})
        metric = claim.get("measure", {}).get("metric")
        if claim.get("interval") == "exact" and metric in known:
            measured[claim["id"]] = float(known[metric])
    return measured
