#!/usr/bin/env python3
"""The peer for Mantissa's CPU benchmark: Mantissa's reference models in PyTorch, eager, on the CPU.

Models (--model), each as Mantissa builds it (app/bench/reference_data.cpp):
- mlp: 784-256-128-10, ReLU, AdamW (lr 1e-3, no weight decay, constant);
- cnn: the reference CNN (resources/experiments/cnn-fashion-mnist.json): two stages of conv 3x3
  (padding 1) - batchnorm - ReLU - max pool 2 with 32 and 64 channels, then 3136-128-10 with ReLU;
  AdamW (lr 1e-3, no weight decay) on a cosine schedule over the training run's steps;
  both batch 128 on Fashion-MNIST from the IDX files of Debian's dataset-fashion-mnist, normalised
  with the training split's global mean and std as Mantissa does;
- gpt: the reference language model (resources/experiments/gpt-text.json): a pre-LayerNorm GPT of
  4 blocks, 4 heads, width 128, context 128, MLP ratio 4, untied head, no dropout; attention
  written out (scores = q k^T / sqrt(head_dim), causal mask, softmax, times v), not
  scaled_dot_product_attention, so that autocast takes its eager path; GELU in its erf form;
  Linear weights N(0, 0.02), the two output projections of each block N(0, 0.02/sqrt(2 layers)),
  embeddings N(0, 0.02), biases 0. AdamW (lr 1e-3, betas 0.9/0.99, eps 1e-8, no weight decay)
  with Mantissa's schedule (engine/train/lr_schedule.cpp): linear warmup from 0 over 100 steps,
  then cosine to 0 over the rest of the run. Batch 32 windows of 128 characters of the fortunes
  corpus (Debian's fortunes, /usr/share/games/fortunes), built as engine/data/fortunes_corpus.h
  says, with the "chars" vocabulary and the last 10% of the tokens held out as in
  engine/data/text_corpus.h; training windows at uniform random offsets (torch's generator: the
  same distribution as Mantissa's, not the same draws), test windows consecutive. Loss: mean
  cross-entropy over every position, nats per token.
Modes: fp32, and bf16 under torch.autocast("cpu", dtype=torch.bfloat16). With PyTorch 1.13's CPU
autocast the gpt's linear layers and attention matmuls run in bf16, the softmax stays in bf16 (it is
on no CPU autocast list), LayerNorm sees the fp32 residual stream, and cross-entropy runs in fp32.

Two ways to run it:
- standalone: `python3 torch_peer.py [--model mlp|cnn|gpt] [--epochs 3] [--steps 600] [--seed 1] [--threads N]
  [--modes fp32,bf16] [--json]` times interleaved blocks of steps after a warm-up (median, spread)
  and then trains fresh models for the given epochs (mlp, cnn: test accuracy) or steps (gpt: test
  loss over the whole test part) and reports the result;
- `--serve`, as `mantissa-cli bench --suite peer` runs it: after loading and warming up it prints
  one JSON line {"ready": true, ...} (for gpt also the corpus: vocab_size, tokens, train_tokens,
  test_tokens, test_samples, context) and then answers commands on stdin, one JSON line each:
    block MODE STEPS     -> {"mode", "steps", "seconds", "samples_per_s"} (gpt: a sample is a
                            window of context tokens; also "tokens_per_s")
    accuracy MODE EPOCHS -> {"mode", "epochs", "steps", "test_accuracy", "seconds"}  (mlp, cnn)
    loss MODE STEPS [WARMUP] -> {"mode", "steps", "warmup_steps", "test_loss", "perplexity",
                            "seconds"}  (gpt: a fresh model trained STEPS steps, its schedule over
                            those steps with WARMUP warmup steps, default min(100, STEPS / 6))
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
import math
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


# ---- The language model (--model gpt) ----

# The reference LM (resources/experiments/gpt-text.json, app/bench/reference_data.cpp).
GPT = {"layers": 4, "heads": 4, "dim": 128, "context": 128, "mlp_ratio": 4, "tie_embeddings": False,
       "test_fraction": 0.1, "batch": 32, "lr": 1e-3, "betas": (0.9, 0.99), "eps": 1e-8, "weight_decay": 0.0,
       "warmup_steps": 100, "steps": 600}


def fortunes_text(folder):
    """The corpus text, as engine/data/fortunes_corpus.h builds it: the regular files of `folder`
    whose names neither start with '.' nor end in '.dat', in sorted byte order; each file's UTF-8
    byte-order mark dropped, its separator lines ('%' or '%\\r') made empty, a line break after its
    last line. Empty files add nothing."""
    if not os.path.isdir(folder):
        raise SystemExit(f"torch_peer.py: {folder} does not exist (apt-get install fortunes)")
    names = sorted((n for n in os.listdir(folder) if not n.startswith(".") and not n.endswith(".dat")),
                   key=lambda n: n.encode("utf-8", "surrogateescape"))
    out = bytearray()
    for name in names:
        path = os.path.join(folder, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()  # the file ended with a line break
        for line in lines:
            if line not in (b"%", b"%\r"):
                out += line
            out += b"\n"
    if out.startswith(b"\xef\xbb\xbf"):
        del out[:3]  # engine/data/text_corpus.cpp drops one at the start of the whole text too
    return out.decode("utf-8")  # strict: Mantissa refuses text that is not well-formed UTF-8


class TextCorpus:
    """The "chars" vocabulary and split of engine/data/text_corpus.h: ids are the training part's
    distinct code points in ascending order, then one unknown id; the test part is the last
    floor(tokens * test_fraction) tokens."""

    def __init__(self, torch, text, context, test_fraction):
        import numpy as np
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        n = points.shape[0]
        split = n - int(math.floor(n * test_fraction))
        chars = np.unique(points[:split])
        ids = np.searchsorted(chars, points)
        known = (ids < chars.shape[0]) & (chars[np.minimum(ids, chars.shape[0] - 1)] == points)
        ids = np.where(known, ids, chars.shape[0])
        self.vocab_size = int(chars.shape[0]) + 1
        self.test_unknown = int((~known).sum())
        self.context = context
        self.tokens = torch.from_numpy(ids.astype(np.int64))
        self.train = self.tokens[:split]
        self.test = self.tokens[split:]
        if min(self.train.shape[0], self.test.shape[0]) < context + 1:
            raise SystemExit("torch_peer.py: the corpus is too short for the context")
        self.test_samples = (self.test.shape[0] - 1) // context
        self.torch = torch
        self.window = torch.arange(context + 1)

    def info(self):
        return {"vocab_size": self.vocab_size, "tokens": int(self.tokens.shape[0]),
                "train_tokens": int(self.train.shape[0]), "test_tokens": int(self.test.shape[0]),
                "test_unknown": self.test_unknown, "test_samples": self.test_samples, "context": self.context}

    def train_batch(self, batch, generator):
        # Offsets uniform in [0, train_tokens - context - 1].
        offsets = self.torch.randint(0, self.train.shape[0] - self.context, (batch,), generator=generator)
        w = self.train[offsets[:, None] + self.window[None, :]]
        return w[:, :-1], w[:, 1:]

    def test_batch(self, first, count):
        # Test windows first .. first + count - 1, window i at i * context.
        starts = self.torch.arange(first, first + count) * self.context
        w = self.test[starts[:, None] + self.window[None, :]]
        return w[:, :-1], w[:, 1:]


def make_gpt(torch, vocab_size, seed):
    torch.manual_seed(seed)
    nn = torch.nn
    g = GPT
    d, heads, layers = g["dim"], g["heads"], g["layers"]

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.register_buffer("causal", torch.ones(g["context"], g["context"], dtype=torch.bool).tril())

        def forward(self, x):
            b, t, _ = x.shape
            hd = d // heads
            q, k, v = self.qkv(x).split(d, dim=2)  # columns [0,d), [d,2d), [2d,3d)
            q, k, v = (z.view(b, t, heads, hd).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
            att = att.masked_fill(~self.causal[:t, :t], float("-inf"))
            att = torch.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
            return self.proj(y)

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(d, g["mlp_ratio"] * d)
            self.act = nn.GELU()  # the exact erf form
            self.proj = nn.Linear(g["mlp_ratio"] * d, d)

        def forward(self, x):
            return self.proj(self.act(self.fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d, eps=1e-5)
            self.attn = Attention()
            self.ln2 = nn.LayerNorm(d, eps=1e-5)
            self.mlp = Mlp()

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, d)
            self.wpe = nn.Embedding(g["context"], d)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(d, eps=1e-5)
            # As Mantissa's: an untied head is a linear layer with a bias (zero at the start); the
            # tied head has none.
            self.head = nn.Linear(d, vocab_size, bias=not g["tie_embeddings"])
            if g["tie_embeddings"]:
                self.head.weight = self.wte.weight
            for name, p in self.named_parameters():
                if name.endswith("attn.proj.weight") or name.endswith("mlp.proj.weight"):
                    nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
                elif name.startswith("ln") or ".ln" in name:
                    nn.init.ones_(p) if name.endswith("weight") else nn.init.zeros_(p)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)
                else:  # Linear weights, wte, wpe
                    nn.init.normal_(p, 0.0, 0.02)
            self.register_buffer("positions", torch.arange(g["context"]))

        def forward(self, ids):
            x = self.wte(ids) + self.wpe(self.positions[:ids.shape[1]])
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    return Gpt()


def lr_factor(step, warmup, total):
    """engine/train/lr_schedule.cpp's cosine with warmup, over the base lr, at step `step` (from 0)."""
    if warmup > 0 and step < warmup:
        return step / warmup
    progress = min(max((step - warmup) / max(1, total - warmup), 0.0), 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


class GptTrainer:
    def __init__(self, torch, mode, corpus, batch, seed, total_steps=10 ** 9, warmup_steps=GPT["warmup_steps"]):
        """total_steps: the run's length for the schedule (timing: huge, so it stays near the base lr)."""
        self.torch, self.mode, self.batch, self.corpus = torch, mode, batch, corpus
        self.model = make_gpt(torch, corpus.vocab_size, seed)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=GPT["lr"], betas=GPT["betas"], eps=GPT["eps"],
                                     weight_decay=GPT["weight_decay"])
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda s: lr_factor(s, warmup_steps, total_steps))
        self.generator = torch.Generator().manual_seed(seed)

    def _loss(self, x, y, reduction="mean"):
        F = self.torch.nn.functional
        if self.mode == "bf16":
            with self.torch.autocast("cpu", dtype=self.torch.bfloat16):
                logits = self.model(x)
                return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction=reduction)
        logits = self.model(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction=reduction)

    def step(self):
        x, y = self.corpus.train_batch(self.batch, self.generator)
        self.opt.zero_grad(set_to_none=True)
        loss = self._loss(x, y)
        loss.backward()
        self.opt.step()
        self.schedule.step()
        return loss

    def test_loss(self, chunk=32):
        """Mean cross-entropy over every position of every test window, nats per token."""
        self.model.eval()
        total, count = 0.0, 0
        with self.torch.no_grad():
            n = self.corpus.test_samples
            for first in range(0, n, chunk):
                x, y = self.corpus.test_batch(first, min(chunk, n - first))
                total += float(self._loss(x, y, reduction="sum").double())
                count += y.numel()
        self.model.train()
        return total / count


def gpt_warmup_for(steps):
    return min(GPT["warmup_steps"], steps // 6)


def train_for_loss(torch, mode, corpus, batch, steps, warmup=None, seed=1):
    warmup = gpt_warmup_for(steps) if warmup is None else warmup
    t = GptTrainer(torch, mode, corpus, batch, seed=seed, total_steps=steps, warmup_steps=warmup)
    t0 = time.perf_counter()
    for _ in range(steps):
        t.step()
    loss = t.test_loss()
    return {"mode": mode, "steps": steps, "warmup_steps": warmup, "test_loss": loss, "perplexity": math.exp(loss),
            "seconds": time.perf_counter() - t0}


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
    if args.model == "gpt":
        return TextCorpus(torch, fortunes_text(args.data), GPT["context"], GPT["test_fraction"])
    shape = IMAGE_SHAPES[args.model]
    train_x, train_y = load_split(args.data, "train", torch, shape)
    test_x, test_y = load_split(args.data, "t10k", torch, shape)
    mean, std = train_x.mean(), train_x.std()
    return (train_x - mean) / std, train_y, (test_x - mean) / std, test_y


def make_trainer(args, torch, mode, data):
    """A trainer for timing: the schedule (if any) stays at its start."""
    if args.model == "gpt":
        return GptTrainer(torch, mode, data, args.batch, seed=1)
    return Trainer(torch, args.model, mode, (data[0], data[1]), args.batch, seed=1)


def train_for_accuracy(torch, model, mode, data, batch, epochs):
    train_x, train_y, test_x, test_y = data
    steps = epochs * (train_x.shape[0] // batch)
    t = Trainer(torch, model, mode, (train_x, train_y), batch, seed=1, total_steps=steps)
    t0 = time.perf_counter()
    for _ in range(steps):
        t.step()
    return {"mode": mode, "epochs": epochs, "steps": steps, "test_accuracy": t.accuracy(test_x, test_y),
            "seconds": time.perf_counter() - t0}


def block_reply(args, mode, steps, seconds):
    reply = {"mode": mode, "steps": steps, "seconds": seconds, "samples_per_s": steps * args.batch / seconds}
    if args.model == "gpt":
        reply["tokens_per_s"] = steps * args.batch * GPT["context"] / seconds
    return reply


def serve(args, torch, data):
    modes = args.modes.split(",")
    trainers = {m: make_trainer(args, torch, m, data) for m in modes}
    for m in modes:  # warm-up
        for _ in range(args.warmup):
            trainers[m].step()
    ready = {"ready": True, "peer": "pytorch", "model": args.model, "torch_version": torch.__version__,
             "threads": torch.get_num_threads(), "batch": args.batch, "blas": blas_report(torch)}
    if args.model == "gpt":
        ready["corpus"] = data.info()
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        try:
            if words[0] == "block" and len(words) == 3 and words[1] in trainers:
                steps = int(words[2])
                t0 = time.perf_counter()
                for _ in range(steps):
                    trainers[words[1]].step()
                reply = block_reply(args, words[1], steps, time.perf_counter() - t0)
            elif words[0] == "accuracy" and len(words) == 3 and words[1] in trainers and args.model != "gpt":
                reply = train_for_accuracy(torch, args.model, words[1], data, args.batch, int(words[2]))
            elif words[0] == "loss" and len(words) in (3, 4) and words[1] in trainers and args.model == "gpt":
                steps = int(words[2])
                warmup = int(words[3]) if len(words) == 4 else None
                if steps < 1 or (warmup is not None and warmup < 0):
                    raise ValueError("STEPS must be at least 1 and WARMUP at least 0")
                reply = train_for_loss(torch, words[1], data, args.batch, steps, warmup)
            else:
                reply = {"error": f"unknown command: {line.strip()}"}
        except ValueError as e:
            reply = {"error": f"bad command '{line.strip()}': {e}"}
        print(json.dumps(reply), flush=True)
    return 0


def standalone(args, torch, data):
    modes = args.modes.split(",")
    trainers = {m: make_trainer(args, torch, m, data) for m in modes}
    rates = {m: [] for m in modes}
    for m in modes:  # warm-up
        for _ in range(args.warmup):
            trainers[m].step()
    for _ in range(args.blocks):  # interleaved timed blocks
        for m in modes:
            t0 = time.perf_counter()
            for _ in range(args.block_steps):
                trainers[m].step()
            rates[m].append(args.block_steps * args.batch / (time.perf_counter() - t0))
    blas = blas_report(torch)
    for m in modes:
        if args.model == "gpt":
            r = train_for_loss(torch, m, data, args.batch, args.steps, seed=args.seed)
        else:
            r = train_for_accuracy(torch, args.model, m, data, args.batch, args.epochs)
        med = statistics.median(rates[m])
        r.update({"peer": "pytorch", "model": args.model, "torch_version": torch.__version__,
                  "threads": torch.get_num_threads(), "batch": args.batch, "samples_per_s": med,
                  "spread": (max(rates[m]) - min(rates[m])) / med, "blas": blas})
        if args.model == "gpt":
            r["tokens_per_s"] = med * GPT["context"]
            r["corpus"] = data.info()
        if args.json:
            print(json.dumps(r))
        elif args.model == "gpt":
            print(f"{m:6} {med:10.1f} sequences/s ({r['tokens_per_s']:.0f} tokens/s, spread {r['spread']*100:.0f}%)  "
                  f"test loss {r['test_loss']:.4f} nats/token (perplexity {r['perplexity']:.2f}) after "
                  f"{r['steps']} steps ({r['seconds']:.0f} s)  [BLAS: {blas['kind']}]")
        else:
            print(f"{m:6} {med:10.0f} samples/s (spread {r['spread']*100:.0f}%)  test accuracy "
                  f"{r['test_accuracy']*100:.2f}% after {r['epochs']} epochs  [BLAS: {blas['kind']}]")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["cnn", "gpt", "mlp"], default="mlp")
    ap.add_argument("--data", default=None,
                    help="Fashion-MNIST's folder (mlp, cnn; default /usr/share/datasets/fashion-mnist) or the "
                         "fortunes folder (gpt; default /usr/share/games/fortunes)")
    ap.add_argument("--epochs", type=int, default=3, help="mlp, cnn: epochs before the test accuracy")
    ap.add_argument("--steps", type=int, default=GPT["steps"], help="gpt: steps before the test loss")
    ap.add_argument("--seed", type=int, default=1, help="gpt: the seed of the standalone loss run (init and windows)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--modes", default="fp32,bf16")
    ap.add_argument("--batch", type=int, default=None, help="default 128 (mlp, cnn) or 32 (gpt)")
    ap.add_argument("--block-steps", type=int, default=None, help="default 50 (mlp, cnn) or 5 (gpt)")
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args()
    gpt = args.model == "gpt"
    if args.data is None:
        args.data = "/usr/share/games/fortunes" if gpt else "/usr/share/datasets/fashion-mnist"
    if args.batch is None:
        args.batch = GPT["batch"] if gpt else 128
    if args.block_steps is None:
        args.block_steps = 5 if gpt else 50
    args.warmup = 3 if gpt else 10  # untimed steps per mode before the first block
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
