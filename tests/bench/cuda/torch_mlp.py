#!/usr/bin/env python3
"""The bench_cuda MLP in PyTorch, eager, on the same GPU: the comparison docs/cuda.md reports.

W -> W -> W -> 16, ReLU, AdamW (lr 1e-4), cross-entropy, the batch resident on the GPU;
torch.autocast for fp16/bf16 (tf32: allow_tf32; fp32: TF32 off) and torch.amp.GradScaler on,
like bench_cuda's "checks" variant. No FP8 (eager PyTorch has no FP8 autocast).
Prints CSV: precision,width,batch,samples_per_s. Exits 0 with a note when torch or CUDA is absent.
"""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widths", default="256,1024,8192")
    ap.add_argument("--batches", default="256,16384")
    ap.add_argument("--precisions", default="fp32,tf32,fp16,bf16")
    ap.add_argument("--seconds", type=float, default=0.5)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("# torch_mlp: PyTorch is not installed; no comparison", file=sys.stderr)
        return 0
    if not torch.cuda.is_available():
        print("# torch_mlp: PyTorch sees no GPU; no comparison", file=sys.stderr)
        return 0
    dev = torch.device("cuda")
    print("precision,width,batch,samples_per_s")
    for prec in args.precisions.split(","):
        if prec not in ("fp32", "tf32", "fp16", "bf16"):
            continue
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        torch.backends.cudnn.allow_tf32 = prec == "tf32"
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec)
        for w in map(int, args.widths.split(",")):
            for b in map(int, args.batches.split(",")):
                model = torch.nn.Sequential(
                    torch.nn.Linear(w, w), torch.nn.ReLU(), torch.nn.Linear(w, w), torch.nn.ReLU(),
                    torch.nn.Linear(w, 16)).to(dev)
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
                scaler = torch.amp.GradScaler("cuda")
                x = torch.randn(b, w, device=dev)
                y = torch.arange(b, device=dev) % 16

                def step():
                    with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                        loss = torch.nn.functional.cross_entropy(model(x), y)
                    opt.zero_grad(set_to_none=True)
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()

                for _ in range(3):
                    step()
                torch.cuda.synchronize()
                n, start = 0, time.perf_counter()
                while n < 3 or (time.perf_counter() - start < args.seconds and n < 200):
                    step()
                    n += 1
                    if n % 4 == 0:
                        torch.cuda.synchronize()
                torch.cuda.synchronize()
                elapsed = time.perf_counter() - start
                print(f"{prec},{w},{b},{b * n / elapsed:.1f}", flush=True)
                del model, opt, x, y
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
