"""The 9-layer VGG-like CNN of DP-FERMI's UTK-Face experiment (``FeedForward`` in the paper's code).

References: Lowy, Gupta, Razaviyayn 2023, "Stochastic Differentially Private and Fair Learning"
(ICLR), Sec. 4 / App. F.3, and the released DP-FERMI code (``models.py``: ``FeedForward``);
Simonyan & Zisserman 2015 (VGG); Ulyanov, Vedaldi, Lempitsky 2016 (Instance Normalization).

Three blocks of 3x3 convolutions (each followed by ReLU, some then by InstanceNorm without
affine parameters) and a linear head: 1,612,713 parameters at ``input_size=128`` and 9 classes. It
returns logits. ``track_running_stats`` defaults to False, so one example's output and gradient
never depend on the rest of the batch and per-example clipping bounds the sensitivity.

Architecture, parameter count and choices: papers/dpfermi/NOTES.md, section "The VGG-like CNN of
the UTK-Face experiment".
"""

from __future__ import annotations

import torch
from torch import nn

# (in, out, stride, InstanceNorm after the ReLU); ``None`` as in = the model's input channels.
LAYERS: tuple[tuple[int | None, int, int, bool], ...] = (
    (None, 8, 1, False), (8, 16, 1, True), (16, 16, 2, True),
    (16, 32, 1, False), (32, 64, 1, True), (64, 64, 2, True),
    (64, 128, 1, False), (128, 256, 1, True), (256, 256, 2, True),
)
DOWNSAMPLING = 8  # three stride-2 convolutions


class VGG9(nn.Module):
    """DP-FERMI's UTK-Face CNN; input (B, C, s, s), output logits (B, num_classes).

    1,612,713 parameters at the defaults (3 input channels, 128x128 input, 9 classes).
    """

    def __init__(
        self,
        num_classes: int = 9,
        in_channels: int = 3,
        input_size: int = 128,
        track_running_stats: bool = False,
    ) -> None:
        super().__init__()
        if input_size < DOWNSAMPLING or input_size % DOWNSAMPLING:
            raise ValueError(f"input_size must be a positive multiple of {DOWNSAMPLING}, got "
                             f"{input_size}")
        layers: list[nn.Module] = []
        for c_in, c_out, stride, norm in LAYERS:
            layers += [nn.Conv2d(in_channels if c_in is None else c_in, c_out, kernel_size=3,
                                 stride=stride, padding=1, bias=True), nn.ReLU()]
            if norm:
                layers.append(nn.InstanceNorm2d(c_out, affine=False,
                                                track_running_stats=track_running_stats))
        self.features = nn.Sequential(*layers)
        side = input_size // DOWNSAMPLING
        self.head = nn.Linear(LAYERS[-1][1] * side * side, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))
