"""Run inside a subprocess that imports the real bindings: describe each requested API chain as JSON.

``python api_dump.py MODULE < chains.json > described.json``. For each chain: ``kind`` (class,
method, property, enum, function, value, missing) and, for callables, the pybind11/Cython
signature lines (``name(self: ..., a: T = d) -> R``); properties say whether they are writable.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys


def signatures(obj, name):
    doc = getattr(obj, "__doc__", None) or ""
    lines = [ln.strip() for ln in doc.splitlines()]
    sigs = [re.sub(r"^\d+\.\s*", "", ln) for ln in lines if re.match(rf"^(\d+\.\s*)?{re.escape(name)}\(", ln)]
    if sigs:
        return sigs
    try:
        return [f"{name}{inspect.signature(obj)}"]
    except (TypeError, ValueError):
        return []


def describe(mod, chain):
    obj, parent = mod, None
    for part in chain.split("."):
        parent = obj
        attr = inspect.getattr_static(obj, part, None) if inspect.isclass(obj) else None
        if isinstance(attr, property):
            return {"kind": "property", "writable": attr.fset is not None}
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return {"kind": "missing"}
    last = chain.split(".")[-1]
    if inspect.isclass(obj):
        init = obj.__dict__.get("__init__") or getattr(obj, "__init__", None)
        return {"kind": "class", "signatures": signatures(init, "__init__")}
    if hasattr(type(obj), "__members__") and not callable(obj):
        return {"kind": "enum", "enum": type(obj).__qualname__, "value": int(obj)}
    if callable(obj):
        return {"kind": "method" if inspect.isclass(parent) else "function", "signatures": signatures(obj, last)}
    return {"kind": "value", "type": type(obj).__name__}


def main():
    mod = importlib.import_module(sys.argv[1])
    chains = json.load(sys.stdin)
    out = {"version": str(getattr(mod, "__version__", "")), "api": {c: describe(mod, c) for c in chains}}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
