"""Keys every compile in a process computes first, computed once in the fork server.

A process that compiles a route, or loads one from its Inductor cache (a re-validation round's
process), first hashes torch's sources (``torch_key``) and Triton's, ``libtriton.so`` included
(``triton_key``), for its cache keys. Both are per-process caches of pure functions of the
installed files, so the torch fork server computes them before its first fork and every child
finds them done, as PyTorch does before it forks its own compile workers
(``torch._inductor.async_compile``). Neither touches the device: the fork server's checks (one
thread, CUDA not initialised) still run after it.
"""

from __future__ import annotations

import contextlib


#: per-process caches of ``torch._inductor.codecache`` that a fork inherits
KEYS = ("torch_key", "triton_key")


def prime_caches() -> None:
    """Compute :data:`KEYS` in this process (those this PyTorch has; Triton's is ``None``
    without Triton)."""
    from torch._inductor import codecache

    for name in KEYS:
        key = getattr(codecache, name, None)
        if callable(key):
            with contextlib.suppress(Exception):  # a child computes it itself and reports any error
                key()


def primed() -> dict[str, bool]:
    """Which of :data:`KEYS` this process already holds, without computing any (the fork
    server's children: tests)."""
    from torch._inductor import codecache

    seen = {}
    for name in KEYS:
        key = getattr(codecache, name, None)
        try:
            key.set(None)  # prefetchable_cache: refuses once a value is held
        except RuntimeError:
            seen[name] = True
        except AttributeError:
            seen[name] = False  # not a cache this PyTorch can tell
        else:
            key.clear()
            seen[name] = False
    return seen
