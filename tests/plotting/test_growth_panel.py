"""The growth panel of a run's figure over long times: the linear prediction A_l(0) e^{σ_l t}
is drawn in the small-amplitude phase and stopped once far above the data, without overflow.

A run of SA, β = 10, ν = 0.02 to t = 2000 (σ_3 ≈ 0.40) made `meanfield-pde run` print
"warning: overflow encountered in exp" from the panel's prediction, e^{σ t} = e^{800}.
"""

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from meanfield_pde.plotting.growth import draw_growth, predicted_rates  # noqa: E402

from helpers.bounds import EPS  # noqa: E402

ATTRS = {"model": "SA", "beta": 10.0, "nu": 0.02, "manifold": "sphere"}


def test_long_run_prediction_has_no_overflow_and_stops_above_the_data():
    lmax = 15
    sigma, why = predicted_rates(ATTRS, lmax, circle=False)
    assert not why and sigma[3] > 0.35  # σ_3 = 0.40: the fastest degree
    t = np.linspace(0.0, 2000.0, 201)
    f_bar = 1.0 / (4.0 * np.pi)
    amp = np.full((t.size, lmax + 1), 1e-30)
    amp[:, 0] = f_bar * np.sqrt(4.0 * np.pi)  # C_0 of the uniform density f̄
    for l in range(1, lmax + 1):  # linear growth from 1e-6, saturating at 0.05
        amp[:, l] = 1e-6 * np.exp(np.clip(sigma[l] * t, -50.0, np.log(0.05 / 1e-6)))
    fig, ax = plt.subplots()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an overflow is a RuntimeWarning
            degrees = draw_growth(ax, t, amp ** 2, ATTRS, circle=False)
        assert 3 in degrees
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert len(dashed) == len(degrees)
        # cut where log y <= log(10·top), top = the largest amplitude (0.05 up to its exponential's
        # (|log 5e4| + 2)ε): y <= 10·top within the rounding of log(10·top), exp and 10·top
        top = amp[:, 1:].max()
        for line in dashed:
            y = np.asarray(line.get_ydata())
            assert np.all(np.isfinite(y)) and y.max() <= 10.0 * top * (1 + (abs(np.log(10 * top)) + 3) * EPS)
        # the fastest degree's prediction follows the data in the linear phase (to t ≈ 27)
        fastest = dashed[degrees.index(3)]
        x, y = (np.asarray(v) for v in fastest.get_data())
        early = x <= 20.0
        assert early.sum() >= 2
        # the same σ_3 (predicted_rates) both sides: exp(log 1e-6 + σ(t − t_0)) against 1e-6 e^{σt},
        # the exponents' roundings (ε of |log 1e-6|, |σt| twice, |log y|) and three more ε
        exponents = abs(np.log(1e-6)) + 2 * sigma[3] * x[early].max() + np.abs(np.log(y[early])).max()
        np.testing.assert_allclose(y[early], 1e-6 * np.exp(sigma[3] * x[early]), rtol=(exponents + 3) * EPS)
    finally:
        plt.close(fig)
