"""Which threads importing torch's modules starts, under the torch fork server's environment.

The fork server (``engine.process.launcher_main``) must hold exactly one thread at every fork.
This imports the fork server's preload one module at a time, in a fresh interpreter per variant of
the environment (torch's NVML queries are not redirected here, as the fork server does), and
prints after each the threads: native names (``/proc/self/task/*/comm``), Python threads with the
function each runs and where it was started. It asserts nothing::

    python3 benchmarks/torch_import_threads.py
    python3 benchmarks/torch_import_threads.py --env TORCH_WARM_POOL=0
    python3 benchmarks/torch_import_threads.py --culprit torch._inductor.compile_fx

On the lent H200 (PyTorch 2.11, Triton 3.6) importing ``torch._inductor.compile_fx`` left a native
thread named ``cuda000…``; ``--culprit`` found it started in ``torch._inductor.runtime.benchmarking``
(``torch.cuda.is_available()`` at import), by torch's NVML count (``nvmlInit``): the reason for
``engine.process.nvml``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
MODULES = ("numpy", "onnx", "torch", "torch._dynamo", "torch._inductor.config",
           "torch._inductor.async_compile", "torch._inductor.compile_fx", "triton")

_PROBE = r"""
import importlib, json, os, sys, threading, time, traceback
started = {}
_orig = threading.Thread.start
def _start(self, *a, **k):
    started[self.name] = ''.join(traceback.format_stack(limit=12)[:-1])[-1500:]
    return _orig(self, *a, **k)
threading.Thread.start = _start
for name in sys.argv[1].split(','):
    t0 = time.perf_counter()
    err = ''
    try:
        importlib.import_module(name)
    except Exception as exc:
        err = f'{type(exc).__name__}: {exc}'
    tasks = sorted(os.listdir('/proc/self/task'))
    comms = []
    for t in tasks:
        try:
            comms.append(open(f'/proc/self/task/{t}/comm').read().strip())
        except OSError:
            comms.append('?')
    py = [{'name': t.name, 'daemon': t.daemon,
           'target': getattr(getattr(t, '_target', None), '__qualname__', repr(getattr(t, '_target', None))),
           'started_at': started.get(t.name, '')}
          for t in threading.enumerate() if t is not threading.main_thread()]
    print(json.dumps({'module': name, 'import_s': round(time.perf_counter() - t0, 3), 'error': err,
                      'threads': len(tasks), 'native_names': comms, 'python_threads': py}), flush=True)
"""

#: after each module's code ran (innermost first), the thread count: the first module that
#: ended with more threads than it began with is where a thread was started
_CULPRIT = r"""
import importlib, importlib.abc, json, os, sys, time
stack = []
found = []
def threads():
    return len(os.listdir('/proc/self/task'))
class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if found:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = getattr(finder, 'find_spec', lambda *a: None)(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                loader = spec.loader
                orig = loader.exec_module
                def exec_module(module, orig=orig, name=name):
                    before = threads()
                    stack.append(name)
                    try:
                        orig(module)
                    finally:
                        stack.pop()
                    if not found and threads() > before:
                        found.append({'module': name, 'threads_before': before, 'threads_after': threads(),
                                      'importing': list(stack)})
                loader.exec_module = exec_module
                return spec
        return None
for name in sys.argv[1].split(','):
    importlib.import_module(name)
sys.meta_path.insert(0, Watch())
t0 = time.perf_counter()
importlib.import_module(sys.argv[2])
print(json.dumps({'target': sys.argv[2], 'import_s': round(time.perf_counter() - t0, 3),
                  'culprit': found[0] if found else None,
                  'modules_loaded': len(sys.modules)}), flush=True)
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", action="append", default=[], help="NAME=VALUE added to the fork server's")
    p.add_argument("--modules", default=",".join(MODULES))
    p.add_argument("--culprit", default="", help="import MODULES' first four, then this one, watching "
                   "each module it imports: the first to end with a new thread")
    args = p.parse_args(argv)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTORCH_NVML_BASED_CUDA_CHECK="1",
               TORCHINDUCTOR_COMPILE_THREADS="1")
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    print(json.dumps({"env": args.env}), flush=True)
    if args.culprit:
        before = ",".join(args.modules.split(",")[:4])
        return subprocess.call([sys.executable, "-c", _CULPRIT, before, args.culprit], env=env, cwd=ROOT)
    return subprocess.call([sys.executable, "-c", _PROBE, args.modules], env=env, cwd=ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
