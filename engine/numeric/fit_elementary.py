#!/usr/bin/env python3
"""Fits the coefficients of engine/numeric/elementary.h and prints them with their errors.

Least squares at Chebyshev nodes, weighted for relative error, in double precision (numpy); the
printed coefficients are rounded to FP32, as the header holds them. The errors printed are those
of the fits in double; the header's error in ulps, with FP32 arithmetic, is measured by
tests/engine/numeric/test_elementary.cpp.

    python3 engine/numeric/fit_elementary.py
"""
import math

import numpy as np

NODES = 4000


def fit(f, lo, hi, degree, variable, size=None):
    """Coefficients c (lowest first) of sum c_k variable(x)^k ~ f(x) on [lo, hi], and the largest
    error on a fine grid relative to size(x) (f itself unless given: the function the fit serves,
    where f is only its correction)."""
    size = size or f
    k = np.arange(NODES)
    x = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / NODES)
    y = f(x)
    weight = 1 / np.abs(size(x))
    design = np.vander(variable(x), degree + 1, increasing=True) * weight[:, None]
    c, *_ = np.linalg.lstsq(design, y * weight, rcond=None)
    grid = np.linspace(lo, hi, 200001)
    error = np.max(np.abs(np.polyval(c[::-1], variable(grid)) - f(grid)) / np.abs(size(grid)))
    return c, error


def exp_tail(r):
    """(e^r - 1 - r) / r^2, by its series where the subtraction would cancel."""
    r = np.asarray(r, dtype=float)
    series = sum(r**j / math.factorial(j + 2) for j in range(12))
    direct = (np.expm1(r) - r) / np.where(r == 0, 1, r * r)
    return np.where(np.abs(r) < 0.05, series, direct)


def main():
    erf = np.vectorize(math.erf)
    erfc = np.vectorize(math.erfc)
    half_ln2 = math.log(2) / 2
    switch = 0.9  # erf's two forms meet here
    tail_end = 4.0  # erfc(4) is below half an ulp of 1
    centre = np.float32((1 / tail_end + 1 / switch) / 2)

    fits = {
        "exp: Q(r), e^r = 1 + r + r^2 Q(r), |r| <= ln2/2": fit(exp_tail, -half_ln2, half_ln2, 5, lambda r: r),
        f"erf: A(x^2), erf(x) = x + x A(x^2), |x| < {switch}": fit(
            lambda u: erf(np.sqrt(u)) / np.sqrt(u) - 1, 1e-12, switch**2, 5, lambda u: u,
            lambda u: erf(np.sqrt(u)) / np.sqrt(u)),
        f"erf: B(1/x - {centre:.9g}) ~ erfc(x) e^(x^2), {switch} <= x <= {tail_end}": fit(
            lambda x: erfc(x) * np.exp(x * x), switch, tail_end, 9, lambda x: 1 / x - float(centre)),
    }
    for name, (c, error) in fits.items():
        print(name)
        print("  coefficients, lowest power first:", ", ".join(f"{float(np.float32(v)):.9g}f" for v in c))
        print(f"  largest relative error of the fit: {error:.3g}")


if __name__ == "__main__":
    main()
