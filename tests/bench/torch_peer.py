#!/usr/bin/env python3
"""The peer for Mantissa's CPU benchmark: Mantissa's reference models in PyTorch, eager, on the CPU.

Models (--model), each as Mantissa builds it (app/bench/reference_data.cpp):
- mlp: 784-256-128-10, ReLU, AdamW (lr 1e-3, no weight decay, constant);
- cnn: the reference CNN (resources/experiments/cnn-fashion-mnist.json): two stages of conv 3x3
  (padding 1) - batchnorm - ReLU - max pool 2 with 32 and 64 channels, then 3136-128-10 with ReLU;
  AdamW (lr 1e-3, no weight decay) on a cosine schedule over the training run's steps.
Batch 128, Fashion-MNIST from the IDX files of Debian's dataset-fashion-mnist, normalised with the
training split's global mean and std as Mantissa does. Modes: fp32, and bf16 under
torch.autocast("cpu", dtype=torch.bfloat16).

Two ways to run it:
- standalone: `python3 torch_peer.py [--model mlp|cnn] [--epochs 3] [--threads N] [--modes fp32,bf16] [--json]`
  times interleaved blocks of steps after a warm-up (median, spread) and then trains fresh models
  for the given epochs and reports their test accuracy;
- `--serve`, as `mantissa-cli bench --suite peer` runs it: after loading and warming up it prints
  one JSON line {"ready": true, ...} and then answers commands on stdin, one JSON line each:
    block MODE STEPS     -> {"mode", "steps", "seconds", "samples_per_s"}
    accuracy MODE EPOCHS -> {"mode", "epochs", "steps", "test_accuracy", "seconds"}
    quit
  so that Mantissa's and PyTorch's timed blocks interleave in one run.
Exit status 3 when PyTorch is not installed (one line on stderr says so).
The BLAS PyTorch uses is reported ("blas"): torch.__config__'s BLAS_INFO, the BLAS library this
process actually mapped (Debian's python3-torch calls libblas.so.3: the reference netlib BLAS unless
an OpenBLAS package provides that alternative), and the libblas.so.3 alternative's target.
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


def load_split(folder, prefix, torch, image_shape):
    def find(name):
        for candidate in (name + ".gz", name):
            p = os.path.join(folder, candidate)
            if os.path.exists(p):
                return p
        raise SystemExit(f"torch_peer.py: {name} not found in {folder} (apt-get install dataset-fashion-mnist)")
    shape, images = read_idx(find(f"{prefix}-images-idx3-ubyte"))
    _, labels = read_idx(find(f"{prefix}-labels-idx1-ubyte"))
    x = torch.frombuffer(bytearray(images), dtype=torch.uint8).reshape(shape[0], *image_shape).float() / 255.0
    y = torch.frombuffer(bytearray(labels), dtype=torch.uint8).long()
    return x, y


def make_model(torch, model, seed):
    torch.manual_seed(seed)
    nn = torch.nn
    if model == "cnn":
        def stage(c_in, c_out):
            return [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), nn.MaxPool2d(2)]
        return nn.Sequential(*stage(1, 32), *stage(32, 64), nn.Flatten(),
                             nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


# The shape of one sample as each model reads it.
IMAGE_SHAPES = {"mlp": (-1,), "cnn": (1, 28, 28)}


class Trainer:
    def __init__(self, torch, model, mode, data, batch, seed, total_steps=0):
        """total_steps: the run's length for the cnn's cosine schedule (0: timing, constant lr)."""
        self.torch, self.mode, self.batch = torch, mode, batch
        self.x, self.y = data
        self.model = make_model(torch, model, seed)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=0.0)
        self.schedule = None
        if model == "cnn" and total_steps > 0:
            # Mantissa's cosine (engine/train/lr_schedule.cpp): lr at step s is
            # base * (1 + cos(pi * s / total)) / 2, s counted from 0.
            self.schedule = torch.optim.lr_scheduler.CosineAnnealingLR(self.opt, T_max=total_steps, eta_min=0.0)
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
        if self.schedule is not None:
            self.schedule.step()
        return loss

    def accuracy(self, x, y):
        self.model.eval()  # batchnorm's running statistics
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


def blas_report(torch):
    """Which BLAS this PyTorch uses: its build setting, what is mapped now, the alternative."""
    config = torch.__config__.show()
    info = {}
    for key in ("BLAS_INFO", "LAPACK_INFO"):
        pos = config.find(key + "=")
        if pos >= 0:
            info[key.lower()] = config[pos + len(key) + 1:].split(",")[0].strip()
    a = torch.ones(64, 64)
    (a @ a).sum().item()  # make sure the BLAS is loaded
    mapped = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(path)
                if "blas" in name or "lapack" in name:
                    mapped.add(path)
    except OSError:
        pass
    info["mapped"] = sorted(mapped)
    alt = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"
    if os.path.exists(alt):
        info["libblas_so_3_alternative"] = os.path.realpath(alt)
    # The library that answers libblas.so.3's symbols (the first mapped libblas): its folder names it.
    blas = [p for p in info["mapped"] if os.path.basename(p).startswith("libblas.so")]
    where = (blas[0] if blas else " ".join(info["mapped"])).lower()
    info["kind"] = ("openblas" if "openblas" in where else "netlib (reference)" if "/blas/" in where
                    else "mkl" if "mkl" in where else "unknown")
    return info


def load_data(args, torch):
    shape = IMAGE_SHAPES[args.model]
    train_x, train_y = load_split(args.data, "train", torch, shape)
    test_x, test_y = load_split(args.data, "t10k", torch, shape)
    mean, std = train_x.mean(), train_x.std()
    return (train_x - mean) / std, train_y, (test_x - mean) / std, test_y


def train_for_accuracy(torch, model, mode, data, batch, epochs):
    train_x, train_y, test_x, test_y = data
    steps = epochs * (train_x.shape[0] // batch)
    t = Trainer(torch, model, mode, (train_x, train_y), batch, seed=1, total_steps=steps)
    t0 = time.perf_counter()
    for _ in range(steps):
        t.step()
    return {"mode": mode, "epochs": epochs, "steps": steps, "test_accuracy": t.accuracy(test_x, test_y),
            "seconds": time.perf_counter() - t0}


def serve(args, torch, data):
    modes = args.modes.split(",")
    trainers = {m: Trainer(torch, args.model, m, (data[0], data[1]), args.batch, seed=1) for m in modes}
    for m in modes:  # warm-up
        for _ in range(10):
            trainers[m].step()
    print(json.dumps({"ready": True, "peer": "pytorch", "model": args.model, "torch_version": torch.__version__,
                      "threads": torch.get_num_threads(), "batch": args.batch, "blas": blas_report(torch)}),
          flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        if words[0] == "block" and len(words) == 3 and words[1] in trainers:
            steps = int(words[2])
            t0 = time.perf_counter()
            for _ in range(steps):
                trainers[words[1]].step()
            seconds = time.perf_counter() - t0
            reply = {"mode": words[1], "steps": steps, "seconds": seconds, "samples_per_s": steps * args.batch / seconds}
        elif words[0] == "accuracy" and len(words) == 3 and words[1] in trainers:
            reply = train_for_accuracy(torch, args.model, words[1], data, args.batch, int(words[2]))
        else:
            reply = {"error": f"unknown command: {line.strip()}"}
        print(json.dumps(reply), flush=True)
    return 0


def standalone(args, torch, data):
    modes = args.modes.split(",")
    trainers = {m: Trainer(torch, args.model, m, (data[0], data[1]), args.batch, seed=1) for m in modes}
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
    blas = blas_report(torch)
    for m in modes:
        r = train_for_accuracy(torch, args.model, m, data, args.batch, args.epochs)
        med = statistics.median(rates[m])
        r.update({"peer": "pytorch", "torch_version": torch.__version__, "threads": torch.get_num_threads(),
                  "batch": args.batch, "samples_per_s": med, "spread": (max(rates[m]) - min(rates[m])) / med,
                  "blas": blas})
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{m:6} {med:10.0f} samples/s (spread {r['spread']*100:.0f}%)  test accuracy "
                  f"{r['test_accuracy']*100:.2f}% after {r['epochs']} epochs  [BLAS: {blas['kind']}]")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--model", choices=sorted(IMAGE_SHAPES), default="mlp")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--modes", default="fp32,bf16")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--block-steps", type=int, default=50)
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print(f"torch_peer.py: PyTorch is not installed for {sys.executable} (apt-get install python3-torch)",
              file=sys.stderr)
        return 3
    torch.set_num_threads(args.threads)
    data = load_data(args, torch)
    return serve(args, torch, data) if args.serve else standalone(args, torch, data)


if __name__ == "__main__":
    sys.exit(main())
