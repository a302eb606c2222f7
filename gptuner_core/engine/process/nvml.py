"""torch's NVML queries answered by another process (the torch fork server's preload).

PyTorch's fork-safe availability check (``PYTORCH_NVML_BASED_CUDA_CHECK=1``, which the torch
launcher sets) counts devices with ``nvmlInit`` and never shuts NVML down; on the lent H200
NVML's initialisation left a native thread (``cuda000…``) that ``nvmlShutdown`` did not end, and
the fork server must hold one thread at every fork (``launcher_main``).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any


#: torch's own NVML device count and UUIDs, asked in a throwaway interpreter
_NVML_PROBE = ("import json, torch.cuda as c; "
               "print(json.dumps([c._raw_device_count_nvml(), c._raw_device_uuid_nvml()]))")


def nvml_answers(timeout_s: float = 120.0) -> tuple[int, list[str] | None]:
    """What ``torch.cuda``'s NVML queries answer, asked in a fresh interpreter: (-1, None) when
    that fails (torch then falls back to the CUDA runtime, and the launcher to its safe
    preload)."""
    import subprocess

    try:
        out = subprocess.run([sys.executable, "-c", _NVML_PROBE], capture_output=True, text=True,
                             timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
        count, uuids = json.loads(out.stdout.strip().splitlines()[-1])
        return int(count), (list(uuids) if uuids is not None else None)
    except (OSError, ValueError, IndexError, TypeError, subprocess.TimeoutExpired):
        return -1, None


@contextlib.contextmanager
def nvml_elsewhere() -> Iterator[Callable[[], None]]:
    """While a torch launcher preloads, torch's NVML queries are answered by another process.

    PyTorch's fork-safe availability check (``PYTORCH_NVML_BASED_CUDA_CHECK=1``, which the torch
    launcher sets) counts devices with ``nvmlInit`` and never shuts NVML down. On the lent H200
    importing Inductor asks it (``torch._inductor.runtime.benchmarking`` calls
    ``torch.cuda.is_available()`` at import) and NVML's initialisation left a thread (named
    ``cuda000…``) that ``nvmlShutdown`` did not end, so the launcher dropped Inductor from its
    preload and every child imported it again (about a second). Here the answers come from a
    throwaway interpreter, asked once, so no NVML is ever initialised in the launcher; torch's
    functions are put back after the preload, so a child asks NVML itself."""
    answers: list[tuple[int, list[str] | None]] = []

    def ask() -> tuple[int, list[str] | None]:
        if not answers:
            answers.append(nvml_answers())
        return answers[0]

    saved: dict[str, Any] = {}

    def patch() -> None:
        cuda = sys.modules.get("torch.cuda")
        if saved or cuda is None:
            return
        for name, pick in (("_raw_device_count_nvml", 0), ("_raw_device_uuid_nvml", 1)):
            if callable(getattr(cuda, name, None)):
                saved[name] = getattr(cuda, name)
                setattr(cuda, name, lambda pick=pick: ask()[pick])

    try:
        yield patch
    finally:
        cuda = sys.modules.get("torch.cuda")
        for name, fn in saved.items():
            setattr(cuda, name, fn)
