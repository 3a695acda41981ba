#!/usr/bin/env python3
"""GPyTorch's exact GP (CG + LOVE) on Friedman 1: the peer of the GP analysis at scale.

Runs on the GPU when there is one, else on the CPU (with --keops the kernel is
KeOps' CPU code, compiled on first use).

    python3 inst/bench/gpu/bench_gpytorch_gp.py [--n 100000] [--ntest 10000]
        [--iters 50] [--budget 240] [--seed 1] [--precond 100]

The same task as inst/bench/bench_gp_scale.R (Friedman 1, p = 10, x uniform on
[0, 1]^10, noise sd 1; the draws are numpy's, not R's): fit the hyperparameters
(lengthscale, outputscale, noise, constant mean) by maximising the marginal
likelihood with Adam (lr 0.1, GPyTorch's exact-GP recipe: conjugate gradients
with a pivoted-Cholesky preconditioner, stochastic trace estimates), then the
predictive mean and variance at the test points with LOVE (fast_pred_var).
Prints each phase's seconds (CUDA synchronised), the test RMSE, the mean
predictive sd and the 95% interval coverage of the noisy test responses.
Stops the Adam loop when --budget seconds have passed.  Falls back to half the
points when the card runs out of memory.  --keops evaluates the kernel through
KeOps (GPyTorch's route for large n: no n x n matrix is formed; pykeops and
keopscore must be installed, carried as wheels to a machine without them).
"""
import argparse
import math
import time

import numpy as np
import torch
import gpytorch


def friedman1(n, rng):
    x = rng.uniform(size=(n, 10))
    f = (10 * np.sin(np.pi * x[:, 0] * x[:, 1]) + 20 * (x[:, 2] - 0.5) ** 2
         + 10 * x[:, 3] + 5 * x[:, 4])
    return x, f + rng.normal(size=n), f


class GP(gpytorch.models.ExactGP):
    def __init__(self, x, y, lik, keops=False):
        super().__init__(x, y, lik)
        self.mean_module = gpytorch.means.ConstantMean()
        base = gpytorch.kernels.keops.RBFKernel() if keops else gpytorch.kernels.RBFKernel()
        self.covar_module = gpytorch.kernels.ScaleKernel(base)

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def run(n, a):
    rng = np.random.default_rng(a.seed)
    x, y, _ = friedman1(n, rng)
    xt, yt, ft = friedman1(a.ntest, rng)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    X = torch.tensor(x, dtype=torch.float32, device=dev)
    Y = torch.tensor(y, dtype=torch.float32, device=dev)
    XT = torch.tensor(xt, dtype=torch.float32, device=dev)
    lik = gpytorch.likelihoods.GaussianLikelihood().to(dev)
    model = GP(X, Y, lik, a.keops).to(dev)
    model.train(); lik.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(lik, model)
    t0 = sync()
    it = 0
    with gpytorch.settings.max_preconditioner_size(a.precond):
        for it in range(1, a.iters + 1):
            opt.zero_grad()
            loss = -mll(model(X), Y)
            loss.backward()
            opt.step()
            t = sync() - t0
            if it == 1 or it % 5 == 0 or it == a.iters:
                print(f"  iter {it:3d}  -mll/n {loss.item():.4f}  lengthscale "
                      f"{model.covar_module.base_kernel.lengthscale.item():.4f}  outputscale "
                      f"{model.covar_module.outputscale.item():.3f}  noise {lik.noise.item():.4f}  {t:.1f} s",
                      flush=True)
            if t > a.budget:
                print(f"  budget of {a.budget} s reached after {it} iterations", flush=True)
                break
    t_fit = sync() - t0
    model.eval(); lik.eval()
    t1 = sync()
    with torch.no_grad(), gpytorch.settings.fast_pred_var():
        pred = lik(model(XT))
        mu = pred.mean
        var = pred.variance
    t_pred = sync() - t1
    # a second prediction reuses LOVE's cache: the per-point cost
    t2 = sync()
    with torch.no_grad(), gpytorch.settings.fast_pred_var():
        pred2 = lik(model(XT))
        _ = pred2.variance
    t_pred2 = sync() - t2
    mu = mu.double().cpu().numpy()
    sd = var.clamp_min(0).sqrt().double().cpu().numpy()
    rmse = math.sqrt(np.mean((mu - yt) ** 2))
    rmse_f = math.sqrt(np.mean((mu - ft) ** 2))
    cover = np.mean(np.abs(yt - mu) <= 1.959964 * sd)
    # held-out negative log predictive density (Gaussian, the likelihood's noise included)
    nlpd = float(np.mean(0.5 * np.log(2 * math.pi * sd ** 2) + 0.5 * ((yt - mu) / sd) ** 2))
    print(f"RESULT n={n} ntest={a.ntest} iters={it} fit_s={t_fit:.1f} predict_s={t_pred:.2f} "
          f"predict_again_s={t_pred2:.3f} rmse={rmse:.4f} rmse_vs_f={rmse_f:.4f} mean_sd={sd.mean():.4f} "
          f"cover95={cover:.3f} nlpd={nlpd:.4f} lengthscale={model.covar_module.base_kernel.lengthscale.item():.4f} "
          f"outputscale={model.covar_module.outputscale.item():.3f} noise={lik.noise.item():.4f} "
          f"peak_mem_GiB={torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0:.1f}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=100000)
    p.add_argument("--ntest", type=int, default=10000)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--budget", type=float, default=240)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--precond", type=int, default=100)
    p.add_argument("--keops", action="store_true",
                   help="the kernel through KeOps (pykeops): never forms the n x n matrix")
    a = p.parse_args()
    print(f"kernel: {'KeOps' if a.keops else 'dense (GPyTorch default)'}; "
          f"torch {torch.__version__}, gpytorch {gpytorch.__version__}, {torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'}",
          flush=True)
    n = a.n
    while n >= min(10000, a.n):
        try:
            run(n, a)
            return
        except torch.cuda.OutOfMemoryError as e:
            print(f"out of memory at n = {n}: {str(e).splitlines()[0]}", flush=True)
            torch.cuda.empty_cache()
            n //= 2


if __name__ == "__main__":
    main()
