#!/usr/bin/env python3
"""K(X1, X2) v with PyTorch, written the way a user would, for comparison
with askotch's fused CUDA kernel_mv (inst/bench/gpu/bench_cuda.c).

For each chunk of X1 rows: distance matrix (torch.cdist; p=1 for Laplace),
elementwise kernel, then a mat-vec: out[chunk] = K_chunk @ v.  The chunk is
sized so the chunk x n2 kernel block stays under ~1 GiB.

Same sizes, same flop count (3p + 10 per pair, q = 1) and same roofline
(SMs x lanes x 2 x clock, non-tensor) as bench_cuda.  TF32 is disabled so
float32 means IEEE float32 (cdist uses a GEMM for p > 25).

usage: python3 bench_torch.py [--quick]
"""
import math
import sys
import time

try:
    import torch
except ImportError:
    print("SKIP: PyTorch not installed")
    sys.exit(77)

if not torch.cuda.is_available():
    print("SKIP: torch.cuda.is_available() is False")
    sys.exit(77)

QUICK = "--quick" in sys.argv
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
props = torch.cuda.get_device_properties(dev)


def lanes(major, minor, fp64):
    if (major, minor) == (8, 0):
        return 32 if fp64 else 64
    if major >= 9:
        return 64 if fp64 else 128
    if major == 8:
        return 2 if fp64 else 128
    if major == 7:
        return (32 if minor == 0 else 2) if fp64 else 64
    return 2 if fp64 else 64


def clock_hz():
    # torch exposes no clock; ask nvidia-smi (max SM clock), else assume 1.98 GHz (H100 SXM)
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout.split()
        return float(out[0]) * 1e6
    except Exception:
        return 1.98e9


CLK = clock_hz()
SMS = props.multi_processor_count
P32 = SMS * lanes(props.major, props.minor, False) * 2 * CLK
P64 = SMS * lanes(props.major, props.minor, True) * 2 * CLK
print(f"device: {props.name}, cc {props.major}.{props.minor}, {SMS} SMs, {CLK/1e6:.0f} MHz, "
      f"torch {torch.__version__}")
print(f"roofline (non-tensor): FP32 {P32/1e12:.1f} TFLOP/s, FP64 {P64/1e12:.1f} TFLOP/s\n")


def kernel_mv(kind, X1, X2, v, sigma):
    n1, n2 = X1.shape[0], X2.shape[0]
    es = X1.element_size()
    chunk = max(1, min(n1, (1 << 30) // (n2 * es * 2)))
    out = torch.empty(n1, dtype=X1.dtype, device=X1.device)
    for s in range(0, n1, chunk):
        xa = X1[s:s + chunk]
        if kind == "laplace":
            K = torch.exp(-torch.cdist(xa, X2, p=1.0) / sigma)
        else:
            D = torch.cdist(xa, X2)
            if kind == "rbf":
                K = torch.exp(-(D * D) / (2 * sigma * sigma))
            elif kind == "matern12":
                K = torch.exp(-D / sigma)
            elif kind == "matern32":
                u = math.sqrt(3) * D / sigma
                K = (1 + u) * torch.exp(-u)
            else:
                u = math.sqrt(5) * D / sigma
                K = (1 + u + u * u / 3) * torch.exp(-u)
        out[s:s + chunk] = K @ v
    return out


def timeit(fn, reps=3):
    fn()
    torch.cuda.synchronize()
    best = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


print("== GEMM (torch.matmul) ==")
for dt, n in ((torch.float32, 4096 if QUICK else 8192), (torch.float64, 2048 if QUICK else 4096)):
    A = torch.randn(n, n, dtype=dt, device=dev)
    B = torch.randn(n, n, dtype=dt, device=dev)
    t = timeit(lambda: A @ B)
    fl = 2 * n ** 3 / t
    pk = P32 if dt == torch.float32 else P64
    print(f"{str(dt):14s} n={n:6d} {t*1e3:9.2f} ms {fl/1e12:8.2f} TFLOP/s {100*fl/pk:5.1f}% of roofline")
    del A, B

print("\n== K(X1, X2) v, q = 1, n1 = n2 = N (flops/pair = 3p + 10) ==")
print(f"{'prec':7s} {'kernel':9s} {'p':>5s} {'N':>7s} {'ms':>10s} {'Gpairs/s':>12s} {'TFLOP/s':>10s} {'%peak':>8s}")
for dt in (torch.float32, torch.float64):
    for kind in ("rbf", "laplace", "matern12", "matern32", "matern52"):
        for p in (3, 10, 28, 100, 784):
            N = 65536 if p <= 10 else 49152 if p <= 28 else 32768 if p <= 100 else 12288
            if dt == torch.float64:
                N //= 2
            if QUICK:
                N //= 2
            if kind == "laplace" and p >= 100:
                N //= 4  # cdist p=1 has no GEMM path: keep the run short
            g = torch.Generator(device=dev).manual_seed(1)
            X1 = torch.randn(N, p, dtype=dt, device=dev, generator=g)
            X2 = torch.randn(N, p, dtype=dt, device=dev, generator=g)
            v = torch.randn(N, dtype=dt, device=dev, generator=g)
            t = timeit(lambda: kernel_mv(kind, X1, X2, v, math.sqrt(p)))
            pairs = N * N / t
            fl = pairs * (3 * p + 10)
            pk = P32 if dt == torch.float32 else P64
            name = "float" if dt == torch.float32 else "double"
            print(f"{name:7s} {kind:9s} {p:5d} {N:7d} {t*1e3:10.2f} {pairs/1e9:12.2f} {fl/1e12:10.2f} {100*fl/pk:7.1f}%")
            sys.stdout.flush()
            del X1, X2, v
            torch.cuda.empty_cache()
