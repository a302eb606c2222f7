"""Lazy ``name -> "module:Class"`` registries (backends, strategies, CLI commands).

A plug-in is imported only when it is used, so ``import gptuner_core`` never pulls in
onnxruntime, tensorrt, torch or optuna, and one plug-in that fails to import breaks only itself.
"""

from __future__ import annotations

import importlib
from typing import Any


def import_target(target: str) -> Any:
    """Import ``"module:attribute"`` and return the attribute."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def load_registered(
    registry: dict[str, str],
    name: str,
    *,
    kind: str,
    unknown: type[Exception],
    unavailable: type[Exception],
) -> Any:
    """The object registered as ``name``; ``unknown`` lists the names, ``unavailable`` says why
    the import failed (typically an optional dependency that is not installed)."""
    try:
        target = registry[name]
    except KeyError:
        msg = f"unknown {kind} '{name}' (available: {', '.join(registry)})"
        raise unknown(msg) from None
    try:
        return import_target(target)
    except (ImportError, AttributeError) as exc:
        msg = f"{kind} '{name}' is unavailable: cannot import {target} ({exc})"
        raise unavailable(msg) from None
