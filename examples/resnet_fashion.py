#!/usr/bin/env python3
"""A ResNet-8 on Fashion-MNIST at 32 x 32, trained by N processes over murmur gossip or DDP.

    python3 -m murmur.run --nodes 4 --epochs 1 examples/resnet_fashion.py
    python3 examples/resnet_fashion.py --backend ddp --procs 4 --epochs 1     # the DDP twin
    python3 -m murmur.run --nodes 4 --device cuda examples/resnet_fashion.py --amp   # GPUs, bf16

The network is He et al.'s CIFAR ResNet (2016, §4.2) with one basic block per stage (16, 32, 64
channels; 8 weighted layers), with GroupNorm for BatchNorm: every state of a gossiped model is
in its parameters, none in running statistics that gossip would not average. The images are
padded from 28 to 32. `--train-rows N` trains on the first N images (a CPU-sized run).
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from fashion_cnn import classification_scores, load_fashion_mnist  # noqa: E402


class GroupNorm32(torch.nn.GroupNorm):
    """GroupNorm computed in float32 (autocast leaves it to the input's type on the CPU)."""

    def forward(self, x):
        return super().forward(x.float()).to(x.dtype)


def norm(channels):
    return GroupNorm32(min(8, channels // 2), channels)


class Block(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.norm1 = norm(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.norm2 = norm(cout)
        self.skip = None
        if stride != 1 or cin != cout:
            self.skip = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            norm(cout))

    def forward(self, x):
        out = F.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return F.relu(out + (x if self.skip is None else self.skip(x)))


class ResNet8(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, 1, 1, bias=False), norm(16),
                                        torch.nn.ReLU())
        self.stages = torch.nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2))
        self.head = torch.nn.Linear(64, classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


class ResNetFashion(harness.Task):
    name = "resnet8-fashion"
    lr = 0.1
    epochs = 1.0

    def add_arguments(self, parser):
        parser.add_argument("--train-rows", type=int, default=0,
                            help="train on the first N images (0: all 60,000)")

    def load(self, args):
        return load_fashion_mnist(pad=2, train_rows=args.train_rows)

    def model(self, args):
        return ResNet8()

    def loss(self, model, x, y):
        return F.cross_entropy(model(x), y)

    def scores(self, model, xt, yt):
        return classification_scores(model, xt, yt)


if __name__ == "__main__":
    sys.exit(harness.main(ResNetFashion(), __doc__))
