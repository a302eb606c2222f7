"""The engine between strategy and store, in rooms: ``loop/`` (the Tuner and its ask -> evaluate -> tell
loop), ``evaluate/`` (measuring a route), ``decide/`` (the verdict and re-validation), ``files/`` (the study
folder), ``process/`` (launcher, children, isolation) and ``scale/`` (pools, build-ahead, Ray)."""

from __future__ import annotations
