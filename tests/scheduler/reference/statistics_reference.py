#!/usr/bin/env python3
"""Reference values for tests/scheduler/statistics_test.cc, from an
independent implementation: scipy (1.10, Debian's python3-scipy) for the
polygamma functions, the normal quantile, Benjamini-Hochberg (written out as
R's p.adjust defines it) and Dunnett's many-to-one critical value (the
multivariate normal CDF with correlation 1/2), and limma's fitFDist written
out with scipy's special functions and brentq for trigammaInverse.

  /usr/bin/python3 tests/scheduler/reference/statistics_reference.py

prints the values the test hard-codes.
"""
import numpy as np
from scipy import optimize, special, stats


def bh(p):
    p = np.asarray(p, float)
    m = len(p)
    order = np.argsort(p)
    adjusted = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, m * p[i] / rank)
        adjusted[i] = min(running, 1.0)
    return adjusted


def fit_f_dist(s2, df):
    """limma's fitFDist without covariates, plus the project's bound: the
    spread of z beyond sampling taken half a standard error above."""
    s2 = np.asarray(s2, float)
    df = np.asarray(df, float)
    s2 = np.maximum(s2, 1e-5 * np.median(s2))
    z = np.log(s2)
    e = z - special.digamma(df / 2) + np.log(df / 2)
    emean = e.mean()
    evar = ((e - emean) ** 2).sum() / (len(e) - 1)
    m4 = ((e - emean) ** 4).mean()
    evar += 0.5 * np.sqrt(max(0.0, m4 - evar * evar) / len(e))
    evar -= special.polygamma(1, df / 2).mean()
    if evar <= 0:
        return np.exp(emean), np.inf
    d0 = 2 * optimize.brentq(lambda y: special.polygamma(1, y) - evar,
                             1e-8, 1e8)
    s20 = np.exp(emean + special.digamma(d0 / 2) - np.log(d0 / 2))
    return s20, d0


def dunnett_one_sided(k, confidence):
    cov = np.full((k, k), 0.5) + 0.5 * np.eye(k)
    mvn = stats.multivariate_normal(mean=np.zeros(k), cov=cov)
    return optimize.brentq(lambda d: mvn.cdf(np.full(k, d)) - confidence,
                           0.5, 6.0, xtol=1e-6)


print("digamma(1), digamma(0.3), digamma(12.5):",
      special.digamma([1.0, 0.3, 12.5]).tolist())
print("trigamma(1), trigamma(0.3), trigamma(12.5):",
      special.polygamma(1, [1.0, 0.3, 12.5]).tolist())
print("tetragamma(1), tetragamma(0.3), tetragamma(12.5):",
      special.polygamma(2, [1.0, 0.3, 12.5]).tolist())
print("normal quantile 0.975, 1e-6:", stats.norm.ppf([0.975, 1e-6]).tolist())
print("t two-sided p (2.5, dof 7.3):", 2 * stats.t.sf(2.5, 7.3))
print("t quantile 0.95 two-sided, dof 5.5:", stats.t.ppf(0.975, 5.5))
print("BH:", bh([0.01, 0.04, 0.03, 0.005, 0.2, 0.04]).tolist())
print("prior (equal-ish):", fit_f_dist(
    [1.1e-4, 0.6e-4, 2.3e-4, 0.9e-4, 1.4e-4, 0.3e-4, 1.8e-4, 1.0e-4],
    [2, 2, 2, 2, 2, 2, 2, 2]))
rng = np.random.default_rng(3)
true = np.exp(rng.normal(0, 1.0, 60))
s2 = true * rng.chisquare(4, 60) / 4
print("prior (spread, 60 values, dof 4): s2 =", np.round(s2, 6).tolist())
print("  ->", fit_f_dist(np.round(s2, 6), np.full(60, 4.0)))
for k in (2, 5, 9):
    print(f"dunnett one-sided k={k} 0.95:", dunnett_one_sided(k, 0.95))

# Finite dof: Monte Carlo of max_j (X_0 - X_j) / (sqrt(2) S), S^2 ~ chi2_20/20.
rng = np.random.default_rng(1)
x = rng.standard_normal((1000000, 6))
s = np.sqrt(rng.chisquare(20, 1000000) / 20)
t = ((x[:, [0]] - x[:, 1:]) / (np.sqrt(2) * s[:, None])).max(axis=1)
for d in (2.30, 2.389):
    print(f"dunnett k=5 dof 20: P(max <= {d}) =", (t <= d).mean())
