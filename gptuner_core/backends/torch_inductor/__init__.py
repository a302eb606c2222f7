"""PyTorch ``torch.compile`` (Inductor) backend: knobs, model loading, build, runner.

Importing this package does not import torch; the backend imports it inside its methods.
"""

from __future__ import annotations

from gptuner_core.backends.torch_inductor.backend import TorchInductorBackend


__all__ = ["TorchInductorBackend"]
