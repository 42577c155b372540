#!/usr/bin/env python3
"""A small transformer language model on the fortunes' text, trained by N processes over
murmur gossip or DDP: non-vision training, with AdamW.

    python3 -m murmur.run --nodes 4 --epochs 1 examples/fortune_lm.py
    python3 examples/fortune_lm.py --backend ddp --procs 4 --epochs 1     # the DDP twin
    python3 -m murmur.run --nodes 4 --device cuda examples/fortune_lm.py --amp   # GPUs, bf16

The corpus is Debian's `fortunes` package (about 2.5 MB of text under /usr/share/games/fortunes,
MURMUR_FORTUNES_DIR), read as bytes and cut into windows of --context + 1 bytes; a fixed 5 % of
the windows (seeded) is the test set. The model is a decoder-only transformer (pre-norm blocks
of causal self-attention and an MLP; Radford et al. 2019, §2.3) over the 256 byte values.
A sample is a window; the loss is the mean cross-entropy per predicted byte (nats), the
"accuracy" the fraction of next bytes predicted exactly.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CORPUS = os.environ.get("MURMUR_FORTUNES_DIR", "/usr/share/games/fortunes")


def read_corpus(directory):
    """The text files of the fortunes package (not their .dat indexes or .u8 links), in name
    order, as one byte string."""
    names = sorted(n for n in os.listdir(directory)
                   if not n.endswith((".dat", ".u8")) and
                   os.path.isfile(os.path.join(directory, n)))
    if not names:
        raise SystemExit(f"no fortunes under {directory}: install Debian's `fortunes` package "
                         "(ops/install-deps.sh does)")
    return b"".join(open(os.path.join(directory, n), "rb").read() for n in names)


class Lm(torch.nn.Module):
    def __init__(self, context, width, layers, heads):
        super().__init__()
        self.embed = torch.nn.Embedding(256, width)
        self.position = torch.nn.Parameter(torch.zeros(context, width))
        torch.nn.init.normal_(self.position, std=0.02)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                             batch_first=True, norm_first=True)
            for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, 256)
        mask = torch.triu(torch.full((context, context), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, tokens):
        n = tokens.shape[1]
        x = self.embed(tokens) + self.position[:n]
        for block in self.blocks:
            x = block(x, src_mask=self.mask[:n, :n].to(x.dtype))
        return self.head(self.norm(x))


class FortuneLm(harness.Task):
    name = "fortune-lm"
    lr = 0.003
    batch_size = 32
    epochs = 1.0

    def add_arguments(self, parser):
        parser.set_defaults(optimizer="adamw")
        parser.add_argument("--context", type=int, default=32, help="bytes a window predicts")
        parser.add_argument("--width", type=int, default=64)
        parser.add_argument("--layers", type=int, default=2)
        parser.add_argument("--heads", type=int, default=4)
        parser.add_argument("--train-windows", type=int, default=0,
                            help="train on the first N training windows (0: all)")

    def load(self, args):
        text = torch.frombuffer(bytearray(read_corpus(CORPUS)), dtype=torch.uint8)
        span = args.context + 1
        windows = text[:len(text) // span * span].reshape(-1, span).long()
        order = torch.randperm(len(windows), generator=torch.Generator().manual_seed(7))
        test = max(1, len(windows) // 20)
        train, held = windows[order[test:]], windows[order[:test]]
        if args.train_windows > 0:
            train = train[:args.train_windows]
        return train[:, :-1], train[:, 1:], held[:, :-1], held[:, 1:]

    def model(self, args):
        return Lm(args.context, args.width, args.layers, args.heads)

    def loss(self, model, x, y):
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

    def scores(self, model, xt, yt):
        correct, loss, count = 0, 0.0, 0
        for i in range(0, len(yt), 256):
            logits = model(xt[i:i + 256]).float().flatten(0, 1)
            target = yt[i:i + 256].flatten()
            correct += (logits.argmax(1) == target).sum().item()
            loss += F.cross_entropy(logits, target, reduction="sum").item()
            count += target.numel()
        return correct / count, loss / count


if __name__ == "__main__":
    sys.exit(harness.main(FortuneLm(), __doc__))
