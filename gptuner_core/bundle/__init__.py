"""Baseline bundles: a study's recommended artifact with everything a pipeline needs to gate a
change against it (route, fingerprint, raw samples, golden outputs, rebuild commands), one
``manifest.json`` with the sha256 of every file, verified on load.

``write_bundle(study, out)`` makes one; ``load_bundle(dir)`` verifies and opens one;
``gptuner_core.bundle.gate`` decides regression / improvement / no change / inconclusive.
"""

from __future__ import annotations

from gptuner_core.bundle.manifest import Bundle
from gptuner_core.bundle.manifest import load_bundle
from gptuner_core.bundle.write import write_bundle


__all__ = ["Bundle", "load_bundle", "write_bundle"]
