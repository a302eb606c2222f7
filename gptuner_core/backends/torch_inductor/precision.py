"""The torch backend's precision switches: PyTorch's own defaults unless the route asks otherwise.

``-torch:precision=fp32`` (the default route) must be what a user gets from plain ``torch.compile``
without gptuner, or every speed-up is measured against a baseline nobody runs. PyTorch's defaults
are *not* strict fp32: cuDNN convolutions use TF32 (``torch.backends.cudnn.allow_tf32 = True``),
matmuls do not (``torch.backends.cuda.matmul.allow_tf32 = False``, float32 matmul precision
``'highest'``). On an H200, ResNet-50 took 12.43 ms with strict fp32 and 4.40 ms with these
defaults, so a strict baseline made "tf32 2.93x" look like a gptuner find. Strict fp32 stays
available as ``fp32_strict``.
"""

from __future__ import annotations

from typing import Any


#: PyTorch's own values of the TF32 switches, read once before gptuner first changes them.
_FRAMEWORK_FLAGS: dict[str, Any] = {}


def _read_flags() -> dict[str, Any]:
    import torch

    return {
        "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def framework_flags() -> dict[str, Any]:
    """PyTorch's own TF32 switches in this process, as they were before gptuner changed any.

    Read on the first call (every candidate is a fresh process, so that is PyTorch's default:
    ``cudnn.allow_tf32=True``, ``cuda.matmul.allow_tf32=False``, precision ``'highest'``).
    """
    if not _FRAMEWORK_FLAGS:
        _FRAMEWORK_FLAGS.update(_read_flags())
    return dict(_FRAMEWORK_FLAGS)


def precision_flags(precision: str) -> dict[str, Any]:
    """The TF32 switches a precision knob value asks for on CUDA."""
    if precision == "tf32":
        return {"cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True,
                "float32_matmul_precision": "high"}
    if precision == "fp32_strict":
        return {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": False,
                "float32_matmul_precision": "highest"}
    return framework_flags()  # fp32 (the default), bf16, fp16: what PyTorch does by itself


def precision_statements(precision: str) -> list[str]:
    """Python lines that set the same switches (for the reproduce snippet)."""
    f = precision_flags(precision)
    return [
        f"torch.backends.cuda.matmul.allow_tf32 = {f['cuda.matmul.allow_tf32']}",
        f"torch.backends.cudnn.allow_tf32 = {f['cudnn.allow_tf32']}",
        f"torch.set_float32_matmul_precision({f['float32_matmul_precision']!r})",
    ]


def apply_precision_flags(precision: str, device_type: str) -> dict[str, Any]:
    """Set the process-wide TF32 switches for ``precision``; return them as read back."""
    import torch

    framework_flags()  # snapshot PyTorch's own values before the first change
    if device_type == "cuda":
        f = precision_flags(precision)
        torch.backends.cuda.matmul.allow_tf32 = f["cuda.matmul.allow_tf32"]
        torch.backends.cudnn.allow_tf32 = f["cudnn.allow_tf32"]
        torch.set_float32_matmul_precision(f["float32_matmul_precision"])
    return _read_flags()
