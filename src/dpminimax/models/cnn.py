"""The standard small CNN of DP-SGD on 28x28 images (MNIST / Fashion-MNIST).

Papernot et al. 2021 ("Tempered sigmoid activations for deep learning with differential privacy",
Table 1) and the Opacus MNIST example: conv 16@8x8 stride 2 padding 3, max-pool 2 stride 1,
conv 32@4x4 stride 2, max-pool 2 stride 1, fully connected 32, fully connected 10. Tanh (the
tempered sigmoid the paper recommends) or ReLU; no BatchNorm, which is incompatible with
per-example clipping. 26,010 parameters for one input channel and 10 classes. On 32x32 inputs
(CIFAR-10, 32x32 CelebA: paper 004's datasets at the CPU scales) the same layers give 5x5
feature maps before the linear layers (the first linear layer then has 32 x 5 x 5 inputs).
"""

from __future__ import annotations

from torch import nn

from dpminimax.models.mlp import ACTIVATIONS


class SmallCNN(nn.Sequential):
    """Two conv + max-pool stages and two linear layers; input (B, C, 28, 28), output (B, K)."""

    def __init__(
        self, in_channels: int = 1, num_classes: int = 10, activation: str = "tanh",
        input_size: int = 28,
    ) -> None:
        act = ACTIVATIONS[activation]
        side = _feature_side(input_size)
        super().__init__(
            nn.Conv2d(in_channels, 16, kernel_size=8, stride=2, padding=3),  # -> 16x14x14
            act(),
            nn.MaxPool2d(kernel_size=2, stride=1),  # -> 16x13x13
            nn.Conv2d(16, 32, kernel_size=4, stride=2),  # -> 32x5x5 (28x28 input)
            act(),
            nn.MaxPool2d(kernel_size=2, stride=1),  # -> 32x4x4
            nn.Flatten(),
            nn.Linear(32 * side * side, 32),
            act(),
            nn.Linear(32, num_classes),
        )


def _feature_side(input_size: int) -> int:
    """The side of the last feature map for square inputs of side ``input_size``."""
    side = (input_size + 2 * 3 - 8) // 2 + 1 - 1    # conv 8x8/2 pad 3, then max-pool 2/1
    side = (side - 4) // 2 + 1 - 1                  # conv 4x4/2, then max-pool 2/1
    if side < 1:
        raise ValueError(f"SmallCNN needs inputs of side >= 12, got {input_size}")
    return side
