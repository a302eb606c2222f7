"""Backend options of the TensorRT backends, declared as data (name -> (description, default))."""

from __future__ import annotations

from typing import Any


COMMON_OPTIONS: dict[str, tuple[str, Any]] = {
    "workspace_mb": ("builder workspace memory-pool limit in MiB (0 = TensorRT's default)", 0),
    "opt_level": ("builder optimization level 0-5 (TensorRT's default is 3)", 3),
    "timing_cache": (
        "'shared': one timing cache for the whole study, merged back after each build; "
        "'isolated': a fresh cache per candidate (clean A/B, slower builds)",
        "shared",
    ),
    "timing_cache_path": ("shared timing-cache file (default: STUDY/tensorrt_timing.cache)", ""),
    "cuda_graph": ("time launches of a captured CUDA graph (trtexec's default)", True),
    "spin_wait": ("spin while waiting for the GPU instead of a blocking sync (trtexec's default)", True),
    "profiles": (
        "optimization profiles for dynamic inputs: {input: {min: [..], opt: [..], max: [..]}}; "
        "inputs left out use the dataset's shape",
        {},
    ),
}

TRTEXEC_OPTIONS: dict[str, tuple[str, Any]] = {
    **COMMON_OPTIONS,
    "trtexec": ("trtexec executable (name on PATH or a path; env GPTUNER_TRTEXEC)", "trtexec"),
    "timeout_s": ("kill a trtexec child after this many seconds (0 = no limit)", 0),
    "extra_args": ("extra trtexec flags passed to every child, e.g. ['--useManagedMemory']", []),
}
