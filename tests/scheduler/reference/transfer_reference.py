#!/usr/bin/env python3
"""Reference values for tests/scheduler/transfer_test.cc, from an independent
implementation: scipy.stats.spearmanr and scipy.stats.kendalltau (tau-b, the
default variant) of Debian's python3-scipy, and numpy.quantile's default
(linear) interpolation.

  /usr/bin/python3 tests/scheduler/reference/transfer_reference.py \
      > tests/scheduler/reference/transfer_reference.txt

writes the fixture the test reads. One case a line, fields separated by '|':
  corr|NAME|x values|y values|spearman|kendall    (nan when undefined)
  quantile|q|values|numpy.quantile(values, q)
"""
import warnings

import numpy as np
from scipy import stats

warnings.simplefilter("ignore")  # constant inputs: scipy warns, returns nan


def fmt(values):
    return ",".join(repr(float(v)) for v in values)


def corr(name, x, y):
    rho = stats.spearmanr(x, y).correlation
    tau = stats.kendalltau(x, y).correlation
    print(f"corr|{name}|{fmt(x)}|{fmt(y)}|{rho!r}|{tau!r}")


rng = np.random.default_rng(20261204)
corr("three", [0.1, 0.2, 0.3], [0.3, 0.1, 0.2])
corr("identical", [-0.03, -0.01, 0.0, 0.02], [-0.03, -0.01, 0.0, 0.02])
corr("reversed", [1, 2, 3, 4, 5], [5, 4, 3, 2, 1])
corr("ties both", [1, 1, 2, 2, 3, 3, 4], [2, 1, 1, 3, 3, 3, 5])
corr("constant y", [1, 2, 3, 4], [7, 7, 7, 7])
for n in (8, 20, 60):
    x = rng.normal(size=n)
    y = 0.6 * x + 0.8 * rng.normal(size=n)
    corr(f"normal {n}", x, y)
    corr(f"rounded {n}", np.round(x, 1), np.round(y, 1))
for q in (0.0, 0.025, 0.5, 0.975, 1.0):
    values = rng.normal(size=37)
    print(f"quantile|{q!r}|{fmt(values)}|{np.quantile(values, q)!r}")
print(f"quantile|0.3|{fmt([4.0, 1.0, 3.0, 2.0])}|"
      f"{np.quantile([4.0, 1.0, 3.0, 2.0], 0.3)!r}")
