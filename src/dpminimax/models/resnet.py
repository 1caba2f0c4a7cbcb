"""ResNet16 with GroupNorm: the CelebA model of RaCO-DP (128x128 RGB faces, 2 logits).

References:
    He, Zhang, Ren, Sun 2016, "Deep Residual Learning for Image Recognition" (CVPR): the
    ImageNet-style ResNet with BasicBlocks (two 3x3 convs + identity / projection shortcut).
    Wu & He 2018, "Group Normalization" (ECCV): GroupNorm, a per-example normalisation that
    replaces BatchNorm (batch statistics mix examples, which breaks per-example clipping in
    DP-SGD; Berrada et al. 2023 is the "common practice" the paper cites for the swap).
    RaCO-DP paper, Sec. 5 ("Neural networks": "ResNet16 (He et al., 2016) (6.4M parameters)")
    and Appendix E.7 ("we replace batch normalization with group normalization (16 groups)");
    the released RaCO-DP code (``models/resnet.py``).

Architecture (``width = w``, default 64; ``g`` groups, default 16; ``p`` dropout, default 0.3):

    stem     conv 7x7/2 (in -> w, pad 3) - GN - ReLU - max-pool 3x3/2 (pad 1) - dropout
    layer1   2 BasicBlocks, w channels,  stride 1
    layer2   2 BasicBlocks, 2w channels, first stride 2
    layer3   2 BasicBlocks, 4w channels, first stride 2
    layer4   1 BasicBlock,  8w channels, stride 2
    head     global average pool - dropout - Linear(8w -> num_classes)

    BasicBlock: conv 3x3/s - GN - ReLU - dropout - conv 3x3/1 - GN, plus shortcut
    (identity, or conv 1x1/s + GN when stride or channels change), then ReLU.

The choices (layers, stem, shortcut, no conv bias and the 6.4M count, GroupNorm, dropout
sites, init, dtype) and why: ``papers/racodp/NOTES.md`` ("ResNet16-GroupNorm")."""

from __future__ import annotations

import torch
from torch import nn

LAYERS: tuple[int, ...] = (2, 2, 2, 1)
GN_EPS = 1e-5


def _norm(groups: int, channels: int) -> nn.GroupNorm:
    if channels % groups:
        raise ValueError(f"{channels} channels are not divisible into {groups} groups")
    return nn.GroupNorm(groups, channels, eps=GN_EPS)


class BasicBlock(nn.Module):
    """conv3x3(stride) - GN - ReLU - dropout - conv3x3 - GN, + shortcut, ReLU (He et al. 2016)."""

    def __init__(
        self, in_channels: int, out_channels: int, stride: int, groups: int, dropout: float
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(
            in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False
        )
        self.norm1 = _norm(groups, out_channels)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.norm2 = _norm(groups, out_channels)
        self.relu = nn.ReLU()
        if stride != 1 or in_channels != out_channels:
            self.shortcut: nn.Module = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),
                _norm(groups, out_channels),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.dropout(self.relu(self.norm1(self.conv1(x))))
        out = self.norm2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet16(nn.Module):
    """GroupNorm ResNet16 of RaCO-DP (CelebA); input (B, C, H, W), output (B, num_classes).

    6,456,898 parameters at the defaults (3 input channels, 2 classes, width 64).
    """

    def __init__(
        self,
        num_classes: int = 2,
        in_channels: int = 3,
        groups: int = 16,
        dropout: float = 0.3,
        width: int = 64,
    ) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, kernel_size=7, stride=2, padding=3, bias=False),
            _norm(groups, width),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
            nn.Dropout(dropout),
        )
        stages: list[nn.Module] = []
        channels = width
        for i, n_blocks in enumerate(LAYERS):
            out_channels = width * 2**i
            stride = 1 if i == 0 else 2
            blocks = []
            for j in range(n_blocks):
                blocks.append(
                    BasicBlock(channels, out_channels, stride if j == 0 else 1, groups, dropout)
                )
                channels = out_channels
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head_dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(channels, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
            elif isinstance(m, nn.GroupNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(self.head_dropout(x))
