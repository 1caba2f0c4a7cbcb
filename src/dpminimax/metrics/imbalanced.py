"""Metrics of the imbalanced classification of paper 004 (Sec. 5, Table 3) and their
curves over training (Figs. 1-3).

Binary tasks: accuracy, ROC AUC of the positive-class score, F1 of the positive class at the
argmax (threshold 0.5). Multi-class (CIFAR10-ST): accuracy, macro one-vs-rest AUC, macro F1.
The gradient norm of Fig. 1 is ||grad_x Phi(x)||, Phi(x) = min_{lam >= lam0} Psi(x, lam) of
Eq. (5), on a fixed subset of the training rows (the same quantity for every method; at the
minimising lam the lam-gradient is 0), evaluated without noise for plotting only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from scipy.special import log_softmax

from dpminimax.data.inputs import split_inputs
from dpminimax.metrics.classification import roc_auc
from dpminimax.metrics.kl_dro import (
    best_lambda,
    dro_weights,
    example_losses,
    loss_residuals,
    psi,
)

#: Examples per per-example-gradient chunk of the gradient norm (bounds memory).
GRAD_CHUNK = 128


def imbalanced_report(y_true: np.ndarray, logits: np.ndarray) -> dict[str, float]:
    """``test_accuracy``, ``test_auc``, ``test_f1`` of logits (n, K) (K = 1: one binary logit):
    binary AUC of the positive score and F1 of the positive class; for K > 2 the macro
    one-vs-rest AUC and macro F1 (our choice of averaging)."""
    y_true = np.asarray(y_true).astype(int)
    if not np.isfinite(logits).all():  # a diverged run: no metric, not an error
        return {"test_accuracy": float("nan"), "test_auc": float("nan"), "test_f1": float("nan")}
    if logits.shape[1] <= 2:
        scores = logits[:, 0] if logits.shape[1] == 1 else logits[:, 1] - logits[:, 0]
        predicted = (scores > 0).astype(int)
        auc = roc_auc(scores, y_true) if np.unique(y_true).size == 2 else float("nan")
        return {"test_accuracy": float((predicted == y_true).mean()), "test_auc": auc,
                "test_f1": f1(y_true == 1, predicted == 1)}
    predicted = logits.argmax(axis=1)
    present = np.unique(y_true)
    log_probs = log_softmax(logits, axis=1)
    aucs = [roc_auc(log_probs[:, c], y_true == c) for c in present]
    return {"test_accuracy": float((predicted == y_true).mean()),
            "test_auc": float(np.mean(aucs)),
            "test_f1": float(np.mean([f1(y_true == c, predicted == c) for c in present]))}


def f1(actual: np.ndarray, predicted: np.ndarray) -> float:
    """F1 of one class from boolean arrays (0 when it is never predicted nor present)."""
    true_positives = float(np.sum(actual & predicted))
    denominator = float(np.sum(actual) + np.sum(predicted))
    return 2.0 * true_positives / denominator if denominator else 0.0


def dro_gradient_norm(model, params: Mapping[str, torch.Tensor], x: torch.Tensor,
                      y: torch.Tensor, lam0: float, rho: float
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(||grad_x Phi(x)||, lam*, Phi(x))`` (R,) on the rows ``x`` (m, ...), ``y`` (m,): p =
    softmax(l / lam*), grad = sum_i p_i grad l_i (Figs. 1-3's gradient norm) and Phi(x) =
    Psi(x, lam*), the KL-DRO objective Eq. (5)."""
    losses = model.losses(params, x, y)
    lam = best_lambda(losses, lam0, rho).to(losses.dtype)
    objective = psi(losses.double(), lam.double(), rho)
    weights = dro_weights(losses, lam)
    runs = losses.shape[0]
    total: dict[str, torch.Tensor] = {}
    for start in range(0, len(y), GRAD_CHUNK):
        chunk = x[start:start + GRAD_CHUNK]
        xr = chunk.unsqueeze(0).expand(runs, *chunk.shape)
        yc, wc = y[start:start + GRAD_CHUNK], weights[:, start:start + GRAD_CHUNK]

        def residual(logits, yc=yc, wc=wc):
            return wc.unsqueeze(-1) * loss_residuals(logits, yc)

        _, grads = model.per_example_grads(params, xr, residual)
        for key, value in grads.items():
            total[key] = total.get(key, 0) + value.sum(dim=1)
    squared = sum(v.flatten(start_dim=1).square().sum(dim=1) for v in total.values())
    return squared.sqrt(), lam, objective


def prior_objective(y: torch.Tensor, lam0: float, rho: float) -> float:
    """Phi of the constant predictor that outputs the class frequencies of the labels ``y``
    (m,): each example's loss is -log(its class's frequency)."""
    counts = torch.bincount(y.long())
    losses = -torch.log(counts.double() / len(y))[y.long()].unsqueeze(0)
    return float(psi(losses, best_lambda(losses, lam0, rho), rho)[0])


def reference_objectives(model, data, device: torch.device, seeds, *, rows: int, lam0: float,
                         rho: float, output_scale: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, float]:
    """``(Phi at each seed's initialisation (R,), Phi of the class prior)`` on the first
    ``rows`` training rows (the curves' rows): what a trained run must end below. The initial
    model is released as the runs are: its logits times ``output_scale`` (R,) if given."""
    x = _head(split_inputs(data, "train", device), rows)
    y = torch.as_tensor(np.asarray(data.y_train)[:rows], device=device)
    state = model.init_state(len(seeds), device, list(seeds))
    if output_scale is not None:
        state = model.scale_logits(state, output_scale)
    _, _, initial = dro_gradient_norm(model, state, x, y, lam0, rho)
    return initial, prior_objective(y, lam0, rho)


class CurveRecorder:
    """Every ``every`` steps (and at the last), each run's test accuracy / AUC / F1 on the first
    ``rows`` test rows, its loss and DRO gradient norm on the first ``rows`` training rows, and
    the method's own scalars (its dual variable)."""

    def __init__(self, model, data, device: torch.device, *, every: int, steps: int, rows: int,
                 lam0: float, rho: float, runs: int) -> None:
        self.model, self.every, self.steps = model, every, steps
        self.lam0, self.rho = lam0, rho
        self.x_test = _head(split_inputs(data, "test", device), rows)
        self.y_test = np.asarray(data.y_test)[:rows]
        self.x_train = _head(split_inputs(data, "train", device), rows)
        self.y_train = torch.as_tensor(np.asarray(data.y_train)[:rows], device=device)
        self.history: list[list[dict[str, float]]] = [[] for _ in range(runs)]

    def due(self, step: int) -> bool:
        """Whether step ``step`` records a point (every ``every`` steps, and the last)."""
        return step % self.every == 0 or step == self.steps

    def record(self, step: int, params: Mapping[str, torch.Tensor],
               extra: Mapping[str, torch.Tensor]) -> None:
        """Append each run's point at ``params`` (callers record when :meth:`due`)."""
        for history, point in zip(self.history, self.points(step, params, extra), strict=True):
            history.append(point)

    def points(self, step: int, params: Mapping[str, torch.Tensor],
               extra: Mapping[str, torch.Tensor]) -> list[dict[str, float]]:
        """Each run's curve point at ``params`` (no randomness: evaluation mode, exact
        gradients)."""
        logits = self.model.logits(params, self.x_test).cpu().numpy()
        norm, lam, objective = dro_gradient_norm(self.model, params, self.x_train, self.y_train,
                                                 self.lam0, self.rho)
        train_loss = example_losses(self.model.logits(params, self.x_train),
                                    self.y_train).mean(dim=1)
        points = []
        for r in range(len(self.history)):
            point = {"step": step, **imbalanced_report(self.y_test, logits[r]),
                     "dro_gradient_norm": float(norm[r]), "dro_lambda": float(lam[r]),
                     "dro_objective": float(objective[r]),
                     "train_loss": float(train_loss[r])}
            point.update({k: float(v[r]) for k, v in extra.items()})
            points.append(point)
        return points

    def rows(self) -> list[dict[str, Any]]:
        """Per run: the last point's gradient norm and the whole curve (JSON)."""
        last = ("dro_gradient_norm", "dro_objective")
        return [{**{key: h[-1][key] if h else float("nan") for key in last},
                 "curve": json.dumps(h)} for h in self.history]


def _head(x, rows: int):
    if isinstance(x, torch.Tensor):
        return x[:rows]
    return torch.stack([x[i] for i in range(min(rows, len(x)))])
