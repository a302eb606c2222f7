"""A small Gaussian process in numpy for the ``bo`` strategy (no torch, no Optuna).

Matern-5/2 kernel with one length-scale per feature (ARD) on features scaled to [0, 1], unit
signal variance on standardised targets, Gaussian noise. Hyper-parameters maximise the log
marginal likelihood (scipy L-BFGS-B from the previous optimum, a few restarts-free iterations:
the fit is re-run as data grow, so it tracks). Used twice by ``bo``: once on log-latency, once on
feasibility labels (1 built and measured, 0 failed/infeasible), a least-squares classifier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


_SQRT5 = 5.0**0.5
MAX_FIT = 300  # points a GP is fitted on (the best half, then an even spread of the rest)


def fit_subset(n: int) -> list[int]:
    """Indices (of rows sorted best first) a GP is fitted on: all, or the best half + a spread."""
    if n <= MAX_FIT:
        return list(range(n))
    half = MAX_FIT // 2
    step = (n - half) / half
    return list(range(half)) + [half + int(k * step) for k in range(half)]


def prior_line(y: Any, prior_obs: Any) -> tuple[float, float]:
    """Prior mean ``a + b × source`` of the new results ``y`` given the source's values at the
    same routes: ridge toward b = 1 (no source: the mean, b = 0)."""
    import numpy as np

    if prior_obs is None:
        return (float(y.mean()) if len(y) else 0.0), 0.0
    if not len(y):
        return 0.0, 1.0
    lam = 3.0  # pseudo-observations pulling b toward 1
    s = prior_obs - prior_obs.mean()
    b = float((s @ (y - y.mean()) + lam) / (s @ s + lam)) if len(y) > 1 else 1.0
    b = min(max(b, 0.0), 2.0)
    return float(np.mean(y - b * prior_obs)), b


def matern52(a: Any, b: Any, scales: Any) -> Any:
    """Kernel matrix between rows of ``a`` and ``b`` with per-feature length ``scales``."""
    import numpy as np

    a = a / scales
    b = b / scales
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    r = np.sqrt(np.maximum(d2, 0.0)) * _SQRT5
    return (1.0 + r + r * r / 3.0) * np.exp(-r)


@dataclass(frozen=True, slots=True)
class GpHyper:
    """Length-scales (one per feature) and noise variance."""

    scales: tuple[float, ...]
    noise: float


def _nll(theta: Any, x: Any, y: Any) -> tuple[float, Any]:
    """Negative log marginal likelihood and its gradient in (log scales, log noise)."""
    import numpy as np

    n, d = x.shape
    scales, noise = np.exp(theta[:d]), np.exp(theta[d])
    diff2 = (x[:, None, :] - x[None, :, :]) ** 2 / scales**2  # n x n x d
    r = np.sqrt(diff2.sum(2)) * _SQRT5
    e = np.exp(-r)
    k = (1.0 + r + r * r / 3.0) * e + (noise + 1e-8) * np.eye(n)
    try:
        chol = np.linalg.cholesky(k)
    except np.linalg.LinAlgError:
        return 1e10, np.zeros_like(theta)
    from scipy.linalg import cho_solve

    alpha = cho_solve((chol, True), y)
    nll = float(0.5 * y @ alpha + np.log(np.diag(chol)).sum())
    inv = cho_solve((chol, True), np.eye(n))
    w = 0.5 * (inv - np.outer(alpha, alpha))
    common = (5.0 / 3.0) * (1.0 + r) * e  # dk/dlog(scale_j) = common * diff2_j
    grad = np.empty(d + 1)
    grad[:d] = np.einsum("ij,ijk->k", w * common, diff2)
    grad[d] = float(np.trace(w) * noise)
    return nll, grad


def fit_hyper(x: Any, y: Any, start: GpHyper | None = None, *, max_iter: int = 25) -> GpHyper:
    """Maximum-likelihood length-scales and noise (bounded: 0.05-20 and 1e-4-1)."""
    import numpy as np
    from scipy.optimize import minimize

    d = x.shape[1]
    if start is None or len(start.scales) != d:
        start = GpHyper(scales=(0.5,) * d, noise=0.05)
    theta0 = np.log(np.array([*start.scales, start.noise]))
    bounds = [(np.log(0.05), np.log(20.0))] * d + [(np.log(1e-4), np.log(1.0))]
    res = minimize(_nll, theta0, args=(x, y), jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": max_iter})
    theta = res.x if np.isfinite(res.fun) and res.fun < 1e9 else theta0
    return GpHyper(scales=tuple(float(s) for s in np.exp(theta[:d])), noise=float(np.exp(theta[d])))


class Gp:
    """Posterior of a zero-mean GP on ``(x, y)`` with hyper-parameters ``hyper``."""

    def __init__(self, x: Any, y: Any, hyper: GpHyper) -> None:
        import numpy as np

        self.x = x
        self.scales = np.asarray(hyper.scales)
        k = matern52(x, x, self.scales) + (hyper.noise + 1e-8) * np.eye(len(x))
        jitter = 1e-8
        while True:
            try:
                self.chol = np.linalg.cholesky(k + jitter * np.eye(len(x)))
                break
            except np.linalg.LinAlgError:
                jitter *= 100
        from scipy.linalg import cho_solve

        self.alpha = cho_solve((self.chol, True), y)

    def predict(self, xs: Any) -> tuple[Any, Any]:
        """Posterior mean and standard deviation at the rows of ``xs``."""
        import numpy as np

        ks = matern52(xs, self.x, self.scales)
        mean = ks @ self.alpha
        from scipy.linalg import solve_triangular

        v = solve_triangular(self.chol, ks.T, lower=True)
        var = np.maximum(1.0 - (v * v).sum(0), 1e-12)
        return mean, np.sqrt(var)


def expected_improvement(mean: Any, std: Any, best: float, xi: float = 0.01) -> Any:
    """EI for minimisation of standardised targets."""
    import numpy as np
    from scipy.special import ndtr

    z = (best - mean - xi) / std
    return (best - mean - xi) * ndtr(z) + std * np.exp(-0.5 * z * z) / (2.0 * np.pi) ** 0.5
