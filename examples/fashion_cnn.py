#!/usr/bin/env python3
"""A small CNN on Fashion-MNIST, trained by N processes over murmur gossip or torch DDP.

    # 4 processes over murmur gossip (the live table, the report, --straggle as for murmur's own):
    python3 -m murmur.run --nodes 4 --epochs 3 examples/fashion_cnn.py
    # the same model, batch, samples and schedule under torch.distributed DDP (the script starts
    # its 4 processes itself):
    python3 examples/fashion_cnn.py --backend ddp --procs 4
    # one process:
    python3 examples/fashion_cnn.py --backend single
    # on GPUs (the launcher places rank r on a GPU and says which in MURMUR_DEVICE):
    python3 -m murmur.run --nodes 4 --device cuda examples/fashion_cnn.py
    # AdamW inner steps (under murmur, its outer optimizer's rounds every 80 of them):
    python3 -m murmur.run --nodes 4 --epochs 3 examples/fashion_cnn.py --optimizer adamw --lr 0.002

Reads the IDX files of Debian's dataset-fashion-mnist (MURMUR_DATA_DIR). The loop, its flags and
its result line are examples/harness.py's.
"""

import gzip
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

DATA = os.environ.get("MURMUR_DATA_DIR", "/usr/share/datasets/fashion-mnist")


def read_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_fashion_mnist(pad=0, train_rows=0):
    """(train images, labels, test images, labels) as normalized N x 1 x (28 + 2 pad)^2 tensors;
    the first `train_rows` training images only, when given."""
    xs = read_idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    ys = read_idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    xt = read_idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    yt = read_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64)
    if train_rows > 0:
        xs, ys = xs[:train_rows], ys[:train_rows]

    def norm(x):
        t = torch.from_numpy((x - 0.2860) / 0.3530).unsqueeze(1)
        return F.pad(t, (pad, pad, pad, pad)) if pad else t
    return norm(xs), torch.from_numpy(ys), norm(xt), torch.from_numpy(yt)


def classification_scores(model, xt, yt):
    """(accuracy, mean cross-entropy), in chunks of 1000."""
    correct, loss = 0, 0.0
    for i in range(0, len(yt), 1000):
        logits = model(xt[i:i + 1000]).float()
        correct += (logits.argmax(1) == yt[i:i + 1000]).sum().item()
        loss += F.cross_entropy(logits, yt[i:i + 1000], reduction="sum").item()
    return correct / len(yt), loss / len(yt)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(8, 16, 5, padding=2)
        self.fc1 = torch.nn.Linear(16 * 7 * 7, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 8 x 14 x 14
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class FashionCnn(harness.Task):
    name = "fashion-cnn"

    def load(self, args):
        return load_fashion_mnist()

    def model(self, args):
        return Net()

    def loss(self, model, x, y):
        return F.cross_entropy(model(x), y)

    def scores(self, model, xt, yt):
        return classification_scores(model, xt, yt)


if __name__ == "__main__":
    sys.exit(harness.main(FashionCnn(), __doc__))
