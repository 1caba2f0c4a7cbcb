"""ResNet20 with GroupNorm: the model of every DP-DRO experiment (Sec. 5.1).

References:
    He, Zhang, Ren, Sun 2016, "Deep Residual Learning for Image Recognition" (CVPR), Sec. 4.2:
    the CIFAR ResNet with 6n+2 weight layers (n = 3 gives ResNet20).
    Wu & He 2018, "Group Normalization" (ECCV): the per-example normalisation that replaces
    BatchNorm, whose batch statistics mix examples and so break per-example clipping
    (16/32/64 channels, 8 groups: our choice).

Architecture (``width = w``, default 16; ``g`` groups, default 8):

    stem     conv 3x3/1 (in -> w, pad 1) - GN - ReLU
    stage1   3 BasicBlocks, w channels,  stride 1
    stage2   3 BasicBlocks, 2w channels, first stride 2
    stage3   3 BasicBlocks, 4w channels, first stride 2
    head     global average pool - Linear(4w -> num_classes)

    BasicBlock: ResNet16's (:mod:`.resnet`) without dropout: conv 3x3/s - GN - ReLU - conv 3x3/1
    - GN, plus shortcut (identity, or the projection conv 1x1/s + GN when the shape changes:
    He et al. 2016 option B), then ReLU.

Choices: no conv biases (each conv feeds a GroupNorm whose shift makes one redundant); 8 groups
(our choice, the largest power of two dividing 16 with 2 channels a group); Kaiming-normal
convs, GN scale 1 / shift 0. Inputs 32x32 (CIFAR, 3 channels) or 28x28 (MNIST-like, 1 channel;
feature maps 28/14/7). Parameter count, 3 input channels and 10 classes: 272,474 (our
figure for 1x1-conv shortcuts; GN's affine scale/shift count 2 per channel like BN's). The
DP-DRO experiments' 1 channel / 2 classes gives 271,666 (stem -288, head -520).

Every parameter sits in a Linear, an ungrouped Conv2d or a GroupNorm, each called once per
forward, so :class:`~dpminimax.kernels.layerwise.LayerTape` gives exact per-example gradients.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dpminimax.models.resnet import BasicBlock, _norm

BLOCKS_PER_STAGE = 3
class ResNet20(nn.Module):
    """GroupNorm ResNet20 (He et al. 2016, CIFAR variant); input (B, C, H, W), output (B, K)."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3, groups: int = 8,
                 width: int = 16) -> None:
        super().__init__()
        self.stem = nn.Conv2d(in_channels, width, 3, padding=1, bias=False)
        self.stem_norm = _norm(groups, width)
        stages: list[nn.Module] = []
        channels = width
        for i in range(3):
            out_channels = width * 2**i
            blocks = []
            for j in range(BLOCKS_PER_STAGE):
                blocks.append(BasicBlock(channels, out_channels,
                                         2 if i > 0 and j == 0 else 1, groups, dropout=0.0))
                channels = out_channels
            stages.append(nn.Sequential(*blocks))
        self.stage1, self.stage2, self.stage3 = stages
        self.fc = nn.Linear(channels, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.GroupNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem_norm(self.stem(x)))
        x = self.stage3(self.stage2(self.stage1(x)))
        return self.fc(x.mean(dim=(2, 3)))
