#!/usr/bin/env python3
"""The peer for Mantissa's CPU benchmark: the reference experiment in PyTorch, eager, on the CPU.

784-256-128-10 MLP, ReLU, AdamW (lr 1e-3, no weight decay), batch 128, Fashion-MNIST from the IDX
files of Debian's dataset-fashion-mnist, normalised with the training split's global mean and std
as Mantissa does. Modes: fp32, and bf16 under torch.autocast("cpu", dtype=torch.bfloat16).

Throughput is the median of timed blocks of steps after a warm-up, the blocks of the modes
interleaved so a noisy machine slows them alike; accuracy is measured on the test split after the
given number of epochs. Prints one JSON object per mode (or a table without --json).
Usage: python3 torch_mlp.py [--epochs 3] [--threads N] [--modes fp32,bf16] [--json]
"""
import argparse
import gzip
import json
import os
import statistics
import struct
import sys
import time


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def load_split(folder, prefix, torch):
    def find(name):
        for candidate in (name + ".gz", name):
            p = os.path.join(folder, candidate)
            if os.path.exists(p):
                return p
        raise SystemExit(f"torch_mlp.py: {name} not found in {folder} (apt-get install dataset-fashion-mnist)")
    shape, images = read_idx(find(f"{prefix}-images-idx3-ubyte"))
    _, labels = read_idx(find(f"{prefix}-labels-idx1-ubyte"))
    x = torch.frombuffer(bytearray(images), dtype=torch.uint8).reshape(shape[0], -1).float() / 255.0
    y = torch.frombuffer(bytearray(labels), dtype=torch.uint8).long()
    return x, y


def make_model(torch, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))


class Trainer:
    def __init__(self, torch, mode, data, batch, seed):
        self.torch, self.mode, self.batch = torch, mode, batch
        self.x, self.y = data
        self.model = make_model(torch, seed)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=0.0)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.generator = torch.Generator().manual_seed(seed)
        self.order, self.pos, self.epoch = None, 0, 0
        self._new_epoch()

    def _new_epoch(self):
        self.order = self.torch.randperm(self.x.shape[0], generator=self.generator)
        self.pos = 0

    def step(self):
        if self.pos + self.batch > self.x.shape[0]:
            self.epoch += 1
            self._new_epoch()
        idx = self.order[self.pos:self.pos + self.batch]
        self.pos += self.batch
        xb, yb = self.x[idx], self.y[idx]
        self.opt.zero_grad(set_to_none=True)
        if self.mode == "bf16":
            with self.torch.autocast("cpu", dtype=self.torch.bfloat16):
                loss = self.loss_fn(self.model(xb), yb)
        else:
            loss = self.loss_fn(self.model(xb), yb)
        loss.backward()
        self.opt.step()
        return loss

    def accuracy(self, x, y):
        with self.torch.no_grad():
            correct = 0
            for i in range(0, x.shape[0], 1000):
                if self.mode == "bf16":
                    with self.torch.autocast("cpu", dtype=self.torch.bfloat16):
                        out = self.model(x[i:i + 1000])
                else:
                    out = self.model(x[i:i + 1000])
                correct += (out.argmax(1) == y[i:i + 1000]).sum().item()
        return correct / x.shape[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--modes", default="fp32,bf16")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--block-steps", type=int, default=50)
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_mlp.py: PyTorch is not installed (apt-get install python3-torch)", file=sys.stderr)
        return 3
    torch.set_num_threads(args.threads)
    train_x, train_y = load_split(args.data, "train", torch)
    test_x, test_y = load_split(args.data, "t10k", torch)
    mean, std = train_x.mean(), train_x.std()
    train_x, test_x = (train_x - mean) / std, (test_x - mean) / std

    modes = args.modes.split(",")
    trainers = {m: Trainer(torch, m, (train_x, train_y), args.batch, seed=1) for m in modes}
    rates = {m: [] for m in modes}
    for m in modes:  # warm-up
        for _ in range(10):
            trainers[m].step()
    for _ in range(args.blocks):  # interleaved timed blocks
        for m in modes:
            t0 = time.perf_counter()
            for _ in range(args.block_steps):
                trainers[m].step()
            rates[m].append(args.block_steps * args.batch / (time.perf_counter() - t0))

    # Accuracy after the same number of epochs as Mantissa: fresh models, full epochs.
    steps = args.epochs * (train_x.shape[0] // args.batch)
    results = []
    for m in modes:
        t = Trainer(torch, m, (train_x, train_y), args.batch, seed=1)
        for _ in range(steps):
            t.step()
        med = statistics.median(rates[m])
        results.append({"peer": "pytorch", "torch_version": torch.__version__, "mode": m, "threads": args.threads,
                        "batch": args.batch, "samples_per_s": med,
                        "spread": (max(rates[m]) - min(rates[m])) / med, "epochs": args.epochs, "steps": steps,
                        "test_accuracy": t.accuracy(test_x, test_y)})
    for r in results:
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{r['mode']:6} {r['samples_per_s']:10.0f} samples/s (spread {r['spread']*100:.0f}%)  "
                  f"test accuracy {r['test_accuracy']*100:.2f}% after {r['epochs']} epochs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
