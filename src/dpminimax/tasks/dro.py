"""Imbalanced classification under KL-DRO (paper 004): test accuracy, AUC and F1 (Table 3,
Figs. 2-3), the DRO gradient norm and the curves over training (Fig. 1), and the two-way
membership attack of Table 2 (:mod:`dpminimax.metrics.confounded_mia`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from dpminimax.data.inputs import split_inputs
from dpminimax.metrics.confounded_mia import confounded_mia
from dpminimax.metrics.dp_ceiling import dp_auc_ceiling
from dpminimax.metrics.imbalanced import CurveRecorder, imbalanced_report, prior_objective
from dpminimax.tasks.base import Task
from dpminimax.trivial import OUTPUT, prefixed

if TYPE_CHECKING:
    from dpminimax.data import PreparedDataset
    from dpminimax.fit_result import FitResult


class DroClassification(Task):
    """The task of paper 004's methods (MNIST-ST, Fashion-MNIST-ST, CIFAR10-ST, CelebA)."""

    name: ClassVar[str] = "dro_classification"
    #: The workflow's shared attack stage does not apply; Table 2's attack runs in evaluate.
    attacked: ClassVar[bool] = False
    draws_data: ClassVar[bool] = False

    def evaluate(self, fit: FitResult, data: PreparedDataset,
                 device: torch.device) -> list[dict[str, Any]]:
        logits = {split: fit.model.logits(fit.state, split_inputs(data, split, device)
                                          ).cpu().numpy() for split in ("train", "test")}
        attack = confounded_mia(logits["train"], logits["test"], data.y_train, data.y_test,
                                [run.seed for run in fit.runs])
        trivial = initial_model_metrics(fit, data, device)
        rows = []
        for r, run in enumerate(fit.runs):
            ceiling = (float(dp_auc_ceiling(run.epsilon, run.delta))
                       if np.isfinite(run.epsilon) else 1.0)
            rows.append({**imbalanced_report(data.y_test, logits["test"][r]),
                         **(fit.counters[r] if fit.counters else {}),
                         **attack[r], "mia_auc_ceiling": ceiling, **trivial[r]})
        return rows


def output_scales(resolved_params: Sequence[Mapping[str, Any]], device: torch.device
                  ) -> torch.Tensor:
    """1 / T (R,): each run's released logits are its model's divided by its output temperature
    (a parameter of every paper-004 method; 1 where a method has none)."""
    return torch.tensor([1.0 / float(p.get("temperature", 1.0)) for p in resolved_params],
                        device=device)


def initial_model_metrics(fit: FitResult, data: PreparedDataset,
                          device: torch.device) -> list[dict[str, Any]]:
    """Per run, the trivial columns of its initial model (``model.init_state`` of its seed,
    the programs' start, :class:`~dpminimax.algorithms.dro.dro_program.DroProgram`, released
    at the run's output temperature as its trained model is): test
    accuracy, AUC and F1, and at the curves' rows its point of the curves (``trivial_curve``)
    with its DRO gradient norm and objective Phi; and the class prior's Phi on the same rows
    (``prior_dro_objective``). Uses no random numbers of any run."""
    initial = fit.model.scale_logits(
        fit.model.init_state(len(fit.runs), device, [run.seed for run in fit.runs]),
        output_scales(fit.resolved_params, device))
    logits = fit.model.logits(initial, split_inputs(data, "test", device)).cpu().numpy()
    first = fit.resolved_params[0]  # the curves' rows and Phi's lam0, rho are shared
    recorder = CurveRecorder(fit.model, data, device, every=1, steps=0,
                             rows=int(first["curve_rows"]), lam0=float(first["lam0"]),
                             rho=float(first["rho"]), runs=len(fit.runs))
    points = recorder.points(0, initial, {})
    labels = torch.as_tensor(np.asarray(data.y_train)[:int(first["curve_rows"])])
    prior = prior_objective(labels, float(first["lam0"]), float(first["rho"]))
    return [prefixed({**imbalanced_report(data.y_test, logits[r]),
                      "dro_gradient_norm": point["dro_gradient_norm"],
                      "dro_objective": point["dro_objective"], "curve": json.dumps([point])})
            | {OUTPUT: "initial model", "prior_dro_objective": prior}
            for r, point in enumerate(points)]
