"""Model I/O of :mod:`dpminimax.api`: what ``model.pt`` records of a trained batched model, and
the model and states it is loaded back as."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch

from dpminimax.algorithms.fair.jagielski2019 import LogisticMixture
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.models.network import BatchedNetwork

#: Saved model name -> its class (a dataclass rebuilt from its saved fields).
SAVED_MODELS = {cls.name: cls for cls in (BatchedLogisticRegression, LogisticMixture,
                                          BatchedNetwork)}


def model_record(model) -> dict[str, Any]:
    """What ``model.pt`` says of the trained model: a saved model's name and the fields that
    rebuild it; a synthetic problem's class name (the run config names its instance)."""
    if dataclasses.is_dataclass(model):
        return {"name": model.name, **_plain_fields(model)}
    return {"name": type(model).__name__}


def _plain_fields(model) -> dict[str, Any]:
    """The dataclass fields that rebuild ``model`` (tuples as lists, for ``weights_only``)."""
    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(model).items()}


def load_model(path: Path):
    """The batched model, the runs' states and run ids that :func:`model_record` and
    ``dpminimax.api.train`` saved in ``path`` (``model.pt``)."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    spec = saved["model"]
    if spec["name"] not in SAVED_MODELS:
        raise ValueError(f"{path}: unknown model {spec['name']!r}; known: {sorted(SAVED_MODELS)}")
    model = SAVED_MODELS[spec["name"]](**{k: v for k, v in spec.items() if k != "name"})
    return model, saved["state"], saved["run_ids"]
