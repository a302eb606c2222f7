"""``bo``'s transfer prior (``strategies/_transfer.py``): how far the new results may depart
from the source where the study has not looked."""

from __future__ import annotations

import numpy as np
import pytest

from gptuner_core.strategies._transfer import residual_scale


class TestResidualScale:
    def test_without_a_prior_it_is_the_spread_of_the_results(self):
        """Cold: the residuals' own spread, never below 0.05 (as before)."""
        assert residual_scale(np.array([0.0, 0.2, 0.4]), prior_spread=None) == pytest.approx(
            float(np.std([0.0, 0.2, 0.4])))
        assert residual_scale(np.array([0.1, 0.1, 0.1]), prior_spread=None) == pytest.approx(0.05)

    def test_with_a_prior_it_never_falls_below_a_share_of_the_source_spread(self):
        """Results where the source agrees (they cluster at its best routes) do not make the
        model sure of the routes it has not seen: on A6000 -> A100 the observed residuals had a
        spread of 0.10-0.17, the routes both GPUs measured 0.32."""
        tight = np.array([0.0, 0.05, -0.05, 0.02])
        assert residual_scale(tight, prior_spread=0.6) == pytest.approx(0.3)
        assert residual_scale(tight, prior_spread=0.6, share=0.0) == pytest.approx(
            max(float(tight.std()), 0.05))
        wide = np.array([0.0, 1.0, -1.0])
        assert residual_scale(wide, prior_spread=0.6) == pytest.approx(float(wide.std()))

    def test_with_two_results_or_fewer_it_is_a_fixed_guess(self):
        assert residual_scale(np.array([0.3]), prior_spread=0.6) == pytest.approx(0.3)
        assert residual_scale(np.array([0.3, 0.1]), prior_spread=None) == pytest.approx(1.0)
        assert residual_scale(np.array([]), prior_spread=None) == pytest.approx(1.0)
