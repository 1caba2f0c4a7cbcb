"""The 9-layer VGG-like CNN of DP-FERMI's UTK-Face experiment (``FeedForward`` in the paper's code).

References:
    Lowy, Gupta, Razaviyayn 2023, "Stochastic Differentially Private and Fair Learning" (ICLR),
    Sec. 4 / App. F.3: "a deep 9-layer VGG-like classifier (Simonyan & Zisserman, 2015) with
    d ~ 1.6 million parameters" on 128x128 UTK-Face images, 9 age classes; the
    released DP-FERMI code (``models.py``: ``FeedForward``).
    Simonyan & Zisserman 2015, "Very Deep Convolutional Networks for Large-Scale Image
    Recognition" (ICLR): stacks of 3x3 convolutions with padding 1.
    Ulyanov, Vedaldi, Lempitsky 2016, "Instance Normalization": per-example, per-channel
    normalisation over the spatial axes.

Architecture (every conv 3x3, padding 1, with bias, followed by ReLU; "IN" = InstanceNorm2d
without affine parameters, applied after the ReLU):

    block 1   conv1_1 in->8 (stride 1); conv1_2 8->16 (1) + IN; conv1 16->16 (2) + IN
    block 2   conv2_1 16->32 (1); conv2_2 32->64 (1) + IN; conv2 64->64 (2) + IN
    block 3   conv3_1 64->128 (1); conv3_2 128->256 (1) + IN; conv3 256->256 (2) + IN
    head      flatten 256 x (s/8) x (s/8) -> Linear(256 (s/8)^2, num_classes)

At ``input_size=128`` and 9 classes: 1,022,880 conv + 589,833 head (``Linear(65536, 9)``) =
1,612,713 parameters. The model returns logits; the paper's softmax is applied by
the consumer (cross-entropy, or the softmax probabilities F of the FERMI regulariser,
Thm. 3.2). PyTorch's default initialisation (the paper pins none).

Deviations and choices, with reasons:

* ``track_running_stats`` defaults to **False** (instance statistics in training and evaluation;
  the module then has no buffers). The paper's code uses ``track_running_stats=True``. Running
  statistics are *buffers*, not parameters: they are updated, without noise, from every training
  batch and, in eval mode, replace the per-example statistics. A model trained under DP with them
  would therefore release un-privatised averages of the training examples' activations, so the
  privacy guarantee would not cover the released model. Moreover ``torch.func`` per-example
  gradients refuse in-place buffer updates in training mode. ``track_running_stats=True`` is kept
  for code-faithful non-private runs only; the buffers never enter the parameter count.
* InstanceNorm normalises each example by its own statistics, so one example's output and
  gradient never depend on the rest of the batch: per-example clipping bounds the sensitivity
  (checked against a batch-of-one reference in the tests).
* The order ReLU -> InstanceNorm follows the paper's wording ("ReLU after each" conv, "+ IN");
  the released ``models.py`` is not public in full, so the order is not verified against it.
* ``input_size`` and ``num_classes`` are arguments (the head size follows); the input must be
  square with a side divisible by 8 (three stride-2 convolutions).
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
