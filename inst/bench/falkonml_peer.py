#!/usr/bin/env python3
"""FalkonML (Meanti et al., NeurIPS 2020) on data written by an askotch
benchmark, for side-by-side timing: CPU only, the Gaussian kernel
exp(-||x - x'||^2 / (2 sigma^2)), penalty lambda / n (askotch's lambda of
(K + lambda I) w = y), M uniform centres, maxiter CG iterations.

    python3 falkonml_peer.py DIR SIGMA PENALTY M MAXITER THREADS

DIR holds xtr.bin, ytr.bin, xte.bin, yte.bin (float64, row-major x) and
dims.txt ("n p nt").  Prints one line: seconds of fit() and the test RMSE,
then, when MAXITER > 0 and ASKOTCH_FALKON_TRACE is set, a second run's test
RMSE after each iteration (error_fn; not timed).
Build: FORCE_ONLY_CPU=1 pip install --no-build-isolation <falkon checkout>.
"""
import os
import sys
import time

import numpy as np
import torch
import falkon

d, sigma, penalty, M, maxiter, threads = sys.argv[1:7]
torch.set_num_threads(int(threads))
n, p, nt = (int(v) for v in open(os.path.join(d, "dims.txt")).read().split())


def load(name, rows, cols):
    a = np.fromfile(os.path.join(d, name), dtype=np.float64)
    return torch.from_numpy(a.reshape(rows, cols))


xtr, ytr = load("xtr.bin", n, p), load("ytr.bin", n, 1)
xte, yte = load("xte.bin", nt, p), load("yte.bin", nt, 1)
opt = falkon.FalkonOptions(use_cpu=True, keops_active="no", debug=False)
kern = falkon.kernels.GaussianKernel(sigma=float(sigma), opt=opt)


def model(**kw):
    return falkon.Falkon(kernel=kern, penalty=float(penalty), M=int(M), maxiter=int(maxiter),
                         seed=1, options=opt, **kw)


def rmse(pred):
    return float(torch.sqrt(torch.mean((pred.reshape(-1) - yte.reshape(-1)) ** 2)))


m = model()
t0 = time.perf_counter()
m.fit(xtr, ytr)
secs = time.perf_counter() - t0
print(f"falkonml seconds {secs:.3f} rmse {rmse(m.predict(xte)):.6f}", flush=True)
if os.environ.get("ASKOTCH_FALKON_TRACE"):
    m2 = model(error_fn=lambda yt, yp: (rmse(yp), "rmse"), error_every=1)
    m2.fit(xtr, ytr, xte, yte)
