"""Long-context attention at β_n = γ log n (arXiv:2510.05554; Rigollet arXiv:2512.01868 Thm 7).

4. The exact finite-n formula tends to the three limits (1, 4ρ/(1+3ρ), ρ) as
   n → ∞, error decreasing up to n = 1e8; direct computation at n <= 20 000
   agrees with it to round-off on exact equiangular inputs, and within sampling
   error on near-equiangular random inputs.
"""

import math

import numpy as np
import pytest

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.particles.long_context import (deep_direct, direct_inner_products,
                                                  equiangular_tokens, near_equiangular_tokens)
from meanfield_pde.theory.long_context import (critical_gamma, deep_equiangular, limit_inner_product,
                                               one_layer_inner_product, one_layer_radius)

from helpers.bounds import EPS

RHO = 0.5  # critical gamma = 2


def attention_error(n: int, d: int, beta: float) -> float:
    """Round-off of an output cosine (<= 1) of one attention layer over n tokens in R^d, computed
    directly: inner products (d terms), e^{β⟨x_i,x_j⟩} (β ε each), the softmax's n-term sums,
    the outputs' norms and cosines (d terms); the closed form's n^{−γ(1−ρ)} (βε) and products."""
    return (2 * n + 3 * d + 2 * beta + 20) * EPS


def test_formula_against_first_principles_small_n():
    # n = 3 by hand: weights (1, E, E)/D, y_1 = (x_1 + E x_2 + E x_3)/D
    rho, gamma, n = 0.3, 1.7, 3
    beta = gamma * math.log(n)
    g = (1 - rho) * np.eye(3) + rho
    w = np.exp(beta * g)
    w /= w.sum(axis=1, keepdims=True)
    gy = w @ g @ w.T                      # Gram matrix of the outputs
    cos = gy[0, 1] / gy[0, 0]
    tol = attention_error(n, n, beta)
    assert one_layer_inner_product(rho, gamma, n) == pytest.approx(cos, rel=0, abs=tol)
    assert one_layer_radius(rho, gamma, n) == pytest.approx(math.sqrt(gy[0, 0]), rel=0, abs=tol)


@pytest.mark.parametrize("gamma, limit", [(1.0, 1.0), (2.0, 4 * RHO / (1 + 3 * RHO)), (3.0, RHO)])
def test_formula_tends_to_the_three_limits_up_to_1e8(gamma, limit):
    assert critical_gamma(RHO) == 2.0
    assert limit_inner_product(RHO, gamma) == pytest.approx(limit)
    ns = 10.0 ** np.arange(1, 9)
    err = np.abs(one_layer_inner_product(RHO, gamma, ns) - limit)
    assert np.all(np.diff(err) < 0)            # decreasing in n
    assert err[-1] < 1e-3 * err[0] and err[-1] < 1e-4
    # the rates from expanding the formula in E = n^{-γ(1-ρ)}: 1 − cos ≈ (1−ρ)/(ρ E² n²)
    # below the line, (1−ρ)(1 − 2Eρn) above it, A_ii = n/(2n−1) on it
    rate = np.polyfit(np.log(ns[3:]), np.log(err[3:]), 1)[0]
    k = 1 - gamma * (1 - RHO)
    expected = {1.0: -2 * k, 2.0: -1.0, 3.0: k}[gamma]
    assert rate == pytest.approx(expected, rel=0.02)


def test_direct_computation_matches_formula_to_1e10():
    for n in (50, 2000, 20000):
        x = equiangular_tokens(n, RHO)            # sparse, u_i = e_i
        for gamma in (1.0, 2.0, 3.0):
            d = direct_inner_products(x, gamma, rows=np.arange(16))
            tol = attention_error(n, n + 1, gamma * math.log(n))
            assert np.abs(d - one_layer_inner_product(RHO, gamma, n)).max() <= tol
    x = equiangular_tokens(400, 0.3, seed=5)       # dense, randomly rotated frame
    d = direct_inner_products(x, 1.6)
    # the rotation leaves the Gram matrix equiangular within Δ; an output cosine moves by <= (1 + 2β)Δ
    delta = np.abs(x @ x.T - 0.3 - 0.7 * np.eye(400)).max() + 401 * EPS
    tol = attention_error(400, 401, 1.6 * math.log(400)) + (1 + 2 * 1.6 * math.log(400)) * delta
    assert np.abs(d - one_layer_inner_product(0.3, 1.6, 400)).max() <= tol


@pytest.mark.slow
def test_near_equiangular_random_inputs_within_sampling_error():
    n = 1500
    deviation = {}
    for dim in (250, 1000, 4000):
        x = near_equiangular_tokens(n, RHO, dim, seed=1)
        g = x[:200] @ x[:200].T
        realised = g[np.triu_indices(200, 1)]
        spread = 3.0 * realised.std()        # sampling spread of the inputs' inner products
        for gamma in (1.0, 2.0, 3.0):
            d = direct_inner_products(x, gamma, rows=np.arange(200)).mean()
            lo, hi = sorted(one_layer_inner_product([RHO - spread, RHO + spread], gamma, n))
            assert lo <= d <= hi, (dim, gamma, lo, d, hi)
            deviation[dim, gamma] = abs(d - one_layer_inner_product(RHO, gamma, n))
    for gamma in (1.0, 2.0, 3.0):   # and the deviation shrinks as the inputs approach equiangular
        assert deviation[4000, gamma] < deviation[250, gamma] / 4


def test_deep_layers_collapse_or_not():
    n = 10**6
    # subcritical: collapse; supercritical: nothing happens (in the limit, identity)
    below = deep_equiangular(RHO, 1.5, n, 20)
    above = deep_equiangular(RHO, 3.0, n, 20)
    assert 1 - below[-1] <= EPS  # 1 − ρ_20 is far below ε: ρ rounds to 1
    assert above[-1] - RHO < 0.02 and np.all(np.diff(above) >= 0)
    # the map iterated equals layers applied to explicit tokens
    x = equiangular_tokens(300, 0.4, seed=2)
    # each layer adds attention_error; the map ρ → ρ' has slope <= 2.1 along this trajectory (at
    # ρ = 0.4; ~0 after, the collapse), so the tokens' Δ and the first layer's error at most triple
    delta = np.abs(x @ x.T - 0.4 - 0.6 * np.eye(300)).max() + 301 * EPS
    layer = attention_error(300, 301, 1.5 * math.log(300))
    tol = 3 * (delta + layer) + 4 * layer
    assert np.allclose(deep_direct(x, 1.5, 4), deep_equiangular(0.4, 1.5, 300, 4), rtol=0, atol=tol)


@pytest.mark.parametrize("call, match", [
    (lambda: one_layer_inner_product(1.0, 1.0, 10), "rho"),
    (lambda: one_layer_inner_product(0.5, -1.0, 10), "gamma"),
    (lambda: one_layer_inner_product(0.5, 1.0, 1.5), "n = "),
    (lambda: equiangular_tokens(5000, 0.5, seed=1), "2000"),
    (lambda: near_equiangular_tokens(10, 0.5, 2), "dim"),
    (lambda: deep_equiangular(0.5, 1.0, 10, -1), "layers"),
    (lambda: direct_inner_products(equiangular_tokens(10, 0.5), 1.0, rows=[0, 10]), "rows"),
    (lambda: direct_inner_products(equiangular_tokens(10, 0.5), 1.0, rows=[3]), "rows"),
    (lambda: direct_inner_products(np.ones(5), 1.0), "x: shape"),
    (lambda: deep_direct(equiangular_tokens(10, 0.5), 1.0, 1.5), "layers"),
])
def test_bad_arguments_name_the_field(call, match):
    with pytest.raises(ConfigError, match=match):
        call()
