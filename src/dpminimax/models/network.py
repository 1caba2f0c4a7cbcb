"""Neural networks with a leading run axis: R independent runs of one architecture.

The image experiments of the papers train networks with the same algorithms as the linear
models: RaCO-DP's ResNet16 on CelebA (RaCO-DP paper, Sec. 5, App. E.7) and DP-FERMI's VGG-like
CNN on UTK-Face (DP-FERMI paper, Sec. 4, App. F.3). Every algorithm here is written in terms of
the per-example gradient of its objective w.r.t. the model outputs (its *residual*: cross-entropy,
a Lagrangian with histogram weights, an ERMI-regularised loss); :meth:`BatchedNetwork.private_step`
turns any residual into a clipped, noised parameter step (Abadi et al. 2016, Alg. 1) through the
layer-wise per-example gradients of :class:`~dpminimax.kernels.layerwise.LayerTape`: one forward
pass per run, the residual formed from its outputs, one backward pass, so batch-level statistics
(a noisy histogram) and the gradient come from the same forward pass, as in the papers.

State: ``{parameter name: (R, *shape)}``, the parameters of R copies of the architecture, each
initialised from its run's own stream ``(seed, "init")``; dropout draws come from
``(seed, "dropout")``. Runs share nothing but the architecture. Unlike the linear kernels,
convolutions are not bit-identical across batch compositions (a run trained alone and among
others agrees to rounding only).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from dpminimax.kernels.gather import IndexedRows, as_tensor
from dpminimax.kernels.layerwise import LayerTape
from dpminimax.kernels.runs import along_runs
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.models.cnn import SmallCNN
from dpminimax.models.resnet import ResNet16
from dpminimax.models.resnet20 import ResNet20
from dpminimax.models.vgg import VGG9
from dpminimax.privacy.release import BatchedRelease
from dpminimax.seeding import derive_seed

#: Examples per forward pass when evaluating (bounds the activation memory).
EVAL_CHUNK = 256
Residual = Callable[[torch.Tensor], torch.Tensor]


def _small_cnn(input_shape: Sequence[int], num_classes: int) -> nn.Module:
    if tuple(input_shape[1:]) not in ((28, 28), (32, 32)):
        raise ValueError(f"small_cnn takes 28x28 or 32x32 images, got input shape "
                         f"{tuple(input_shape)}")
    return SmallCNN(in_channels=input_shape[0], num_classes=num_classes,
                    input_size=input_shape[-1])


def _vgg9(input_shape: Sequence[int], num_classes: int) -> nn.Module:
    return VGG9(num_classes=num_classes, in_channels=input_shape[0], input_size=input_shape[-1])


def _resnet16(input_shape: Sequence[int], num_classes: int) -> nn.Module:
    return ResNet16(num_classes=num_classes, in_channels=input_shape[0])


def _resnet16_small(input_shape: Sequence[int], num_classes: int) -> nn.Module:
    """ResNet16 at width 8 (GroupNorm with 4 groups): the smoke-scale stand-in of ResNet16."""
    return ResNet16(num_classes=num_classes, in_channels=input_shape[0], width=8, groups=4)


def _resnet20(input_shape: Sequence[int], num_classes: int) -> nn.Module:
    """GroupNorm ResNet20 of the DP-DRO paper (width 16, 8 groups: our choice, the paper gives
    none)."""
    return ResNet20(num_classes=num_classes, in_channels=input_shape[0])


def _resnet20_small(input_shape: Sequence[int], num_classes: int) -> nn.Module:
    """ResNet20 at width 8 (GroupNorm with 4 groups): the smoke-scale stand-in of ResNet20."""
    return ResNet20(num_classes=num_classes, in_channels=input_shape[0], width=8, groups=4)


#: Architecture name -> builder(input_shape (C, H, W), num_classes).
ARCHITECTURES: dict[str, Callable[[Sequence[int], int], nn.Module]] = {
    "small_cnn": _small_cnn, "vgg9": _vgg9, "resnet16": _resnet16,
    "resnet16_small": _resnet16_small, "resnet20": _resnet20,
    "resnet20_small": _resnet20_small,
}


@dataclass(frozen=True)
class BatchedNetwork:
    """R runs of the network ``architecture`` (a key of :data:`ARCHITECTURES`) on inputs of shape
    ``input_shape`` (C, H, W) with ``num_classes`` >= 2 logits (softmax cross-entropy)."""

    architecture: str
    input_shape: tuple[int, ...]
    num_classes: int

    name = "network"

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"unknown network architecture {self.architecture!r}; known: "
                             f"{sorted(ARCHITECTURES)}")
        if self.num_classes < 2:
            raise ValueError(f"a network has num_classes >= 2 logits, got {self.num_classes}")
        object.__setattr__(self, "input_shape", tuple(int(v) for v in self.input_shape))

    @functools.cached_property
    def module(self) -> nn.Module:
        """The architecture's module, whose parameters are replaced by a run's at every call."""
        return ARCHITECTURES[self.architecture](self.input_shape, self.num_classes)

    @property
    def num_features(self) -> int:
        return math.prod(self.input_shape)

    def init_state(self, runs: int, device: torch.device,
                   seeds: Sequence[int] | None = None) -> dict[str, torch.Tensor]:
        """The architecture's default initialisation, run r's from the stream (seed_r, "init")."""
        seeds = list(range(runs)) if seeds is None else list(seeds)
        if len(seeds) != runs:
            raise ValueError(f"{runs} runs but {len(seeds)} seeds")
        states = []
        for seed in seeds:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(derive_seed(seed, "init"))
                fresh = ARCHITECTURES[self.architecture](self.input_shape, self.num_classes)
            states.append({k: v.detach() for k, v in fresh.named_parameters()})
        return {k: torch.stack([s[k] for s in states]).to(device) for k in states[0]}

    def logits(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Logits (R, n, K) in evaluation mode (no dropout) of inputs (n, C, H, W) shared by the
        runs, (R, n, C, H, W), or a map-style dataset of n image tensors (read in chunks), in
        chunks of :data:`EVAL_CHUNK` examples."""
        device = next(iter(state.values())).device
        runs = next(iter(state.values())).shape[0]
        module = self.module.to(device).eval()
        outputs: list[list[torch.Tensor]] = [[] for _ in range(runs)]
        with torch.no_grad():
            for start in range(0, len(x) if _shared(x, self.input_shape) else x.shape[1],
                               EVAL_CHUNK):
                chunk = _chunk(x, start, self.input_shape, device)
                for r in range(runs):
                    inputs = chunk if chunk.dim() == len(self.input_shape) + 1 else chunk[r]
                    outputs[r].append(functional_call(
                        module, {k: v[r] for k, v in state.items()}, (inputs,)))
        return torch.stack([torch.cat(parts) for parts in outputs])

    @functools.cached_property
    def output_layer(self) -> str:
        """The prefix of the last ``nn.Linear``, which every architecture applies last (its
        output is the logits)."""
        return [name for name, m in self.module.named_modules() if isinstance(m, nn.Linear)][-1]

    def scale_logits(self, state: dict[str, torch.Tensor], factor: torch.Tensor
                     ) -> dict[str, torch.Tensor]:
        """The state whose logits are run r's times ``factor[r]`` (R,): the output layer's
        weight and bias scaled (post-processing of a trained state)."""
        scaled = {f"{self.output_layer}.weight", f"{self.output_layer}.bias"}
        return {k: v * factor.reshape(-1, *([1] * (v.dim() - 1))) if k in scaled else v
                for k, v in state.items()}

    def losses(self, state: dict[str, torch.Tensor], x: torch.Tensor,
               y: torch.Tensor) -> torch.Tensor:
        """Per-example cross-entropy (R, n)."""
        logits = self.logits(state, x)
        labels = y if y.dim() == 2 else y.unsqueeze(0).expand(logits.shape[0], -1)
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(),
                               reduction="none").view(labels.shape)

    def predict(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Predicted labels (R, n)."""
        return self.logits(state, x).argmax(dim=-1)

    def private_step(self, state: dict[str, torch.Tensor], x: torch.Tensor | IndexedRows,
                     mask: torch.Tensor, residual_fn: Residual, *, release: BatchedRelease,
                     generators: Sequence[torch.Generator],
                     step_size: torch.Tensor,
                     dropout_streams: Sequence[torch.Generator]) -> torch.Tensor:
        """One clipped, noised step of every run from its objective's residual, in place.

        Run r's batch ``x[r]`` (B, C, H, W) (padding slots where ``mask`` is False) goes through
        the network in training mode (dropout from ``dropout_streams[r]``); ``residual_fn``
        receives the detached logits (R, B, K) of all runs and returns d(loss_i)/d(logits_i)
        (R, B, K); each example's parameter gradient ``J_i^T residual_i`` is clipped to
        ``release.clip[r]``, summed over the unmasked examples, noised by ``release`` from
        ``generators[r]`` and applied with ``step_size[r]``. Returns the logits.
        """
        x = as_tensor(x)
        module = self.module.to(x.device).train()
        tapes = []
        for r in range(x.shape[0]):
            params = {k: v[r].detach().requires_grad_(True) for k, v in state.items()}
            with torch.random.fork_rng(devices=_cuda_devices(x.device)):
                torch.manual_seed(int(torch.randint(
                    0, 2**62, (1,), generator=dropout_streams[r],
                    device=dropout_streams[r].device)))
                tapes.append(LayerTape(module, x[r], parameters=params))
        logits = torch.stack([tape.outputs.detach() for tape in tapes])
        residual = residual_fn(logits) * mask.unsqueeze(-1).to(logits.dtype)
        summed = [tape.clipped_sum(residual[r], release.clip[r]) for r, tape in enumerate(tapes)]
        grads = release.perturb({k: torch.stack([s[k] for s in summed]) for k in state},
                                generators)
        for key, grad in grads.items():
            state[key] -= along_runs(step_size, grad) * grad
        return logits

    def per_example_grads(self, state: dict[str, torch.Tensor], x: torch.Tensor | IndexedRows,
                          residual_fn: Residual
                          ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Logits (R, B, K) and unclipped per-example gradients ``J_i^T residual_i``
        ``{name: (R, B, *shape)}`` of run r's batch ``x[r]`` in evaluation mode (no dropout).

        ``residual_fn`` receives the detached logits (R, B, K) and returns d loss_i / d logits_i
        (R, B, K), as for :meth:`private_step`; one :class:`LayerTape` per run (one forward,
        one backward). For steps that clip a combination of gradients, such as the SPIDER
        difference ``Clip(grad g(w_t; xi) - grad g(w_{t-1}; xi))`` (Alg. 3).
        """
        x = as_tensor(x)
        module = self.module.to(x.device).eval()
        tapes = [LayerTape(module, x[r], parameters={
            k: v[r].detach().requires_grad_(True) for k, v in state.items()})
            for r in range(x.shape[0])]
        logits = torch.stack([tape.outputs.detach() for tape in tapes])
        residual = residual_fn(logits)
        per_run = [tape.per_example(residual[r]) for r, tape in enumerate(tapes)]
        if len(per_run) == 1:  # a view: no copy of the (B, d) gradients
            return logits, {k: per_run[0][k].unsqueeze(0) for k in state}
        return logits, {k: torch.stack([g[k] for g in per_run]) for k in state}

    def clipped_grad_sum(self, state, x, y, mask, max_norm) -> dict[str, torch.Tensor]:
        """Sum over the unmasked examples of per-example cross-entropy gradients clipped to
        ``max_norm`` (R,) (evaluation-mode forward: no dropout)."""
        x = as_tensor(x)
        module = self.module.to(x.device).eval()
        summed = []
        for r in range(x.shape[0]):
            params = {k: v[r].detach().requires_grad_(True) for k, v in state.items()}
            tape = LayerTape(module, x[r], parameters=params)
            residual = (torch.softmax(tape.outputs.detach(), dim=-1)
                        - F.one_hot(y[r], self.num_classes).to(x.dtype))
            summed.append(tape.clipped_sum(residual * mask[r].unsqueeze(-1).to(x.dtype),
                                           max_norm[r]))
        return {k: torch.stack([s[k] for s in summed]) for k in state}


def _shared(x, input_shape: Sequence[int]) -> bool:
    """Whether ``x`` holds one set of inputs for all runs (a dataset or an (n, C, H, W) tensor)."""
    return not isinstance(x, torch.Tensor) or x.dim() == len(input_shape) + 1


def _chunk(x, start: int, input_shape: Sequence[int], device: torch.device) -> torch.Tensor:
    """Examples ``start:start + EVAL_CHUNK`` of ``x`` (along the example axis) on ``device``."""
    if not isinstance(x, torch.Tensor):
        stop = min(len(x), start + EVAL_CHUNK)
        return torch.stack([x[i] for i in range(start, stop)]).to(device)
    if x.dim() == len(input_shape) + 1:
        return x[start:start + EVAL_CHUNK].to(device)
    return x[:, start:start + EVAL_CHUNK].to(device)


def _cuda_devices(device: torch.device) -> list[int]:
    """Devices whose random state the dropout seeding must save and restore."""
    return [device.index or 0] if device.type == "cuda" else []


def batched_model(data, architecture: str, num_classes: int):
    """The batched model a method trains on ``data``: logistic regression (``num_classes`` = 1:
    binary sigmoid; >= 2: softmax) on tabular features, or the network ``architecture`` on
    images; a mismatch is an error naming the parameter to set."""
    if data.kind == "tabular":
        if architecture != "logistic_regression":
            raise ValueError(f"dataset {data.name!r} is tabular: set the method parameter "
                             f"model: logistic_regression (got {architecture!r})")
        return BatchedLogisticRegression(data.x_train.shape[1], num_classes=num_classes)
    if architecture == "logistic_regression":
        raise ValueError(f"dataset {data.name!r} holds images ({data.kind}): set the method "
                         f"parameter model to a network, one of {sorted(ARCHITECTURES)}")
    if data.kind == "image-files":
        size = int(data.meta["images"]["size"])
        shape: tuple[int, ...] = (3, size, size)
    else:
        shape = tuple(data.x_train.shape[1:])
    return BatchedNetwork(architecture, shape, max(2, num_classes))
