"""The engine between strategy and store: one ask -> evaluate -> tell loop and its parts."""

from __future__ import annotations
