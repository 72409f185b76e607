"""The statistics plot_curves draws: per step, the mean paired delta of a
schedule's loss against the baseline trained with the same seed, with its
95% Student-t interval over the seeds.

Student's t quantile is computed here rather than taken from scipy, which
deploy/setup.sh does not install for the client: for an integer number of
degrees of freedom the two-sided probability P(|T| <= t) has a closed form
(Abramowitz & Stegun 26.7.3 and 26.7.4) in theta = atan(t / sqrt(dof)),
increasing in theta, so bisection on theta finds the quantile to double
precision. Tests compare it with scipy.stats.t.ppf.

Thread-safety: pure functions.
"""

import math


def _two_sided_probability(theta, dof):
    """P(|T| <= sqrt(dof) tan(theta)) for T ~ Student t with integer `dof`
    (A&S 26.7.3 for odd dof, 26.7.4 for even)."""
    sin, cos = math.sin(theta), math.cos(theta)
    if dof % 2 == 1:
        total, term = 0.0, cos
        for k in range(1, (dof - 1) // 2 + 1):
            if k > 1:
                term *= cos * cos * (2 * k - 2) / (2 * k - 1)
            total += term
        return 2 / math.pi * (theta + sin * total)
    total, term = 1.0, 1.0
    for k in range(1, dof // 2):
        term *= cos * cos * (2 * k - 1) / (2 * k)
        total += term
    return sin * total


def t_quantile_975(dof):
    """Student's t quantile at 0.975 (the half-width factor of a two-sided
    95% interval) for an integer dof >= 1."""
    dof = int(dof)
    if dof < 1:
        raise ValueError(f"t_quantile_975: dof must be >= 1, not {dof}")
    low, high = 0.0, math.pi / 2
    for _ in range(200):
        middle = (low + high) / 2
        if _two_sided_probability(middle, dof) < 0.95:
            low = middle
        else:
            high = middle
    return math.sqrt(dof) * math.tan((low + high) / 2)


def delta_curve_frame(curves):
    """From Client.curves' frame (seed, step, loss, baseline_loss): per step,
    the mean over seeds of loss - baseline_loss (pairs with both sides at
    that step only), its 95% t interval (NaN with fewer than 2 seeds), and
    the seeds it is over. Columns: step, delta, delta_low, delta_high,
    seeds; by step."""
    import pandas as pd
    paired = curves.dropna(subset=["loss", "baseline_loss"])
    deltas = (paired["loss"] - paired["baseline_loss"]).groupby(
        paired["step"])
    rows = []
    for step, values in deltas:
        n = len(values)
        mean = float(values.mean())
        low = high = math.nan
        if n >= 2:
            half = t_quantile_975(n - 1) * float(values.std(ddof=1)) / \
                math.sqrt(n)
            low, high = mean - half, mean + half
        rows.append({"step": int(step), "delta": mean, "delta_low": low,
                     "delta_high": high, "seeds": n})
    return pd.DataFrame(rows, columns=["step", "delta", "delta_low",
                                       "delta_high", "seeds"])
