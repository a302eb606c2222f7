"""Model input for the ``torch`` backend: an exported program or a factory entry point.

Accepted forms of the ``model`` path:

* ``model.pt2`` — a ``torch.export`` program (``torch.export.save``), loaded with
  ``torch.export.load``; its example inputs (saved with the program) are the example inputs and
  its user-input placeholders name the inputs.
* ``package.module:factory`` — an importable module and a function;
* ``path/to/file.py:factory`` (or just ``path/to/file.py``, meaning ``:factory``) — a Python file.

A factory takes no arguments and returns ``(module, example_inputs)``: a ``torch.nn.Module`` and a
tensor or a tuple/list of tensors (batch-first). Input names are the ``forward`` parameter names,
and the first dimension is reported as dynamic (``"batch"``): a study's build compiles the module
for its ``--batch-size`` (the example's rows cut or repeated, :func:`at_batch`), and other batch
sizes are chunked/padded or compiled when prepared (see :mod:`.runner`). A ``.pt2`` program
reports its exported shapes (dynamic dims by symbol name).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import BackendError


DEFAULT_FACTORY = "factory"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedModel:
    """A module ready to compile, with example inputs (CPU tensors) and input names."""

    module: Any
    example_inputs: tuple[Any, ...]
    input_names: tuple[str, ...]
    source: str
    kind: str  # "exported" | "factory"
    #: per input: an int for a fixed dim, a name for a dynamic one
    dims: tuple[tuple[int | str, ...], ...] = ()

    @property
    def batch(self) -> int | None:
        """The example's rows where every input is batch-first with the same rows, else ``None``."""
        firsts = {int(t.shape[0]) if t.dim() else None for t in self.example_inputs}
        return firsts.pop() if len(firsts) == 1 else None

    def input_specs(self) -> list[TensorSpec]:
        dims = self.dims or tuple(tuple(int(d) for d in t.shape) for t in self.example_inputs)
        return [
            TensorSpec(name=name, dtype=_dtype_name(t), shape=shape)
            for name, t, shape in zip(self.input_names, self.example_inputs, dims, strict=True)
        ]


def at_batch(loaded: LoadedModel, batch: int | None) -> LoadedModel:
    """``loaded`` with example inputs of ``batch`` rows, cut from the example's or its rows
    repeated: the module is compiled for the shapes the study checks and measures (its
    ``--batch-size``), not for the example's (a second graph, compiled in the measuring
    process's turn). Unchanged when ``batch`` is ``None`` or the example's, when the inputs do
    not share a batch dimension (:attr:`LoadedModel.batch`), or when an exported program fixed
    its first dimension."""
    import dataclasses

    import torch

    rows = loaded.batch
    if not batch or rows is None or rows == batch:
        return loaded
    if loaded.kind == "exported" and not all(d and isinstance(d[0], str) for d in loaded.dims):
        return loaded
    copies = -(-int(batch) // rows)
    examples = tuple((torch.cat([t] * copies) if copies > 1 else t)[: int(batch)].contiguous()
                     for t in loaded.example_inputs)
    return dataclasses.replace(loaded, example_inputs=examples)


def _dtype_name(tensor: Any) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def split_entry_point(text: str) -> tuple[str, str]:
    """``"a/b.py:make"`` -> ``("a/b.py", "make")``; a bare ``.py`` file means ``:factory``."""
    target, colon, attr = text.rpartition(":")
    if not colon or "/" in attr or attr.endswith(".py"):
        target, attr = text, DEFAULT_FACTORY
    if not target or not attr.isidentifier():
        msg = (
            f"torch model '{text}': expected a .pt2 file (torch.export), 'package.module:factory' "
            f"or 'path/to/file.py:factory' (got factory name {attr!r})"
        )
        raise BackendError(msg)
    return target, attr


def warm_import(text: str) -> None:
    """Import the module of a factory model (not a ``.pt2``), calling nothing: the fork server
    does this once so that each candidate forked from it finds the module (and what it imports,
    torchvision say) already imported."""
    if text.endswith(".pt2"):
        return
    _import_target(split_entry_point(text)[0], text)


def _import_target(target: str, text: str) -> Any:
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target)
        if not path.is_file():
            msg = f"torch model '{text}': Python file '{path}' does not exist"
            raise BackendError(msg)
        name = "_gptuner_torch_model_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
        stamp = path.stat().st_mtime_ns
        known = sys.modules.get(name)
        if known is not None and getattr(known, "__gptuner_mtime__", None) == stamp:
            return known  # imported by the fork server (or earlier here) from the same file
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            msg = f"torch model '{text}': cannot import '{path}' as a Python module"
            raise BackendError(msg)
        module = importlib.util.module_from_spec(spec)
        module.__gptuner_mtime__ = stamp  # type: ignore[attr-defined]
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            msg = f"torch model '{text}': importing '{path}' failed ({type(exc).__name__}: {exc})"
            raise BackendError(msg) from exc
        return module
    try:
        return importlib.import_module(target)
    except Exception as exc:
        msg = f"torch model '{text}': cannot import module '{target}' ({type(exc).__name__}: {exc})"
        raise BackendError(msg) from exc


def _forward_names(module: Any, count: int) -> tuple[str, ...]:
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(names) < count:
        names = [f"input_{i}" for i in range(count)]
    return tuple(names[:count])


def _load_factory(text: str) -> LoadedModel:
    import torch

    target, attr = split_entry_point(text)
    owner = _import_target(target, text)
    factory = getattr(owner, attr, None)
    if factory is None or not callable(factory):
        got = "nothing" if factory is None else type(factory).__name__
        msg = f"torch model '{text}': '{target}' has no callable '{attr}' (got {got})"
        raise BackendError(msg)
    try:
        produced = factory()
    except Exception as exc:
        msg = f"torch model '{text}': the factory raised {type(exc).__name__}: {exc}"
        raise BackendError(msg) from exc
    if not isinstance(produced, (tuple, list)) or len(produced) != 2:
        msg = (
            f"torch model '{text}': the factory must return (module, example_inputs) "
            f"(got {type(produced).__name__}"
            + (f" of length {len(produced)})" if isinstance(produced, (tuple, list)) else ")")
        )
        raise BackendError(msg)
    module, examples = produced
    if not isinstance(module, torch.nn.Module):
        msg = (
            f"torch model '{text}': the factory's first value must be a torch.nn.Module "
            f"(got {type(module).__name__})"
        )
        raise BackendError(msg)
    if isinstance(examples, torch.Tensor):
        examples = (examples,)
    if (
        not isinstance(examples, (tuple, list))
        or not examples
        or not all(isinstance(t, torch.Tensor) for t in examples)
    ):
        kinds = (
            [type(t).__name__ for t in examples]
            if isinstance(examples, (tuple, list))
            else type(examples).__name__
        )
        msg = (
            f"torch model '{text}': example_inputs must be a tensor or a non-empty tuple/list of "
            f"tensors (got {kinds})"
        )
        raise BackendError(msg)
    examples = tuple(t.detach().cpu() for t in examples)
    return LoadedModel(
        module=module.eval(),
        example_inputs=examples,
        input_names=_forward_names(module, len(examples)),
        source=text,
        kind="factory",
        dims=tuple(
            ("batch", *(int(d) for d in t.shape[1:])) if t.dim() else () for t in examples
        ),
    )


def _load_exported(path: Path) -> LoadedModel:
    import torch

    if not path.is_file():
        msg = f"torch model '{path}': file does not exist"
        raise BackendError(msg)
    try:
        program = torch.export.load(str(path))
    except Exception as exc:
        msg = (
            f"torch model '{path}': not a torch.export program "
            f"(torch.export.load: {type(exc).__name__}: {exc})"
        )
        raise BackendError(msg) from exc
    examples = getattr(program, "example_inputs", None)
    args = examples[0] if examples else None
    if not args or not all(isinstance(t, torch.Tensor) for t in args) or examples[1]:
        msg = (
            f"torch model '{path}': the program holds no positional tensor example inputs "
            "(export with torch.export.export(module, (tensors, ...)) and save with "
            "torch.export.save)"
        )
        raise BackendError(msg)
    from torch.export.graph_signature import InputKind

    names = [
        spec.arg.name
        for spec in program.graph_signature.input_specs
        if spec.kind == InputKind.USER_INPUT
    ]
    if len(names) != len(args):
        names = [f"input_{i}" for i in range(len(args))]
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    dims = []
    for name, example in zip(names, args, strict=True):
        val = getattr(placeholders.get(name), "meta", {}).get("val")
        shape = val.shape if isinstance(val, torch.Tensor) else example.shape
        dims.append(tuple(d if isinstance(d, int) else str(d) for d in shape))
    return LoadedModel(
        module=program.module(),
        example_inputs=tuple(t.detach().cpu() for t in args),
        input_names=tuple(names),
        source=str(path),
        kind="exported",
        dims=tuple(dims),
    )


def flatten_outputs(out: Any) -> tuple[tuple[str, ...], list[Any]]:
    """Names and tensors of a model's output: a tensor, a tuple/list or a dict of tensors (read by
    the compile, ``build``, and the runner, ``runner``: here, below both)."""
    import torch

    if isinstance(out, torch.Tensor):
        return ("output",), [out]
    if isinstance(out, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in out):
        return tuple(f"output_{i}" for i in range(len(out))), list(out)
    if isinstance(out, dict) and all(isinstance(t, torch.Tensor) for t in out.values()):
        return tuple(str(k) for k in out), list(out.values())
    msg = (
        "torch backend: the model must return a tensor, a tuple/list of tensors or a dict of "
        f"tensors (got {type(out).__name__})"
    )
    raise BackendError(msg)


def load_model(model: Path | str) -> LoadedModel:
    """Load a ``.pt2`` program or call a factory; raise :class:`BackendError` on a bad model."""
    text = str(model)
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        msg = f"torch backend: PyTorch is not installed ({exc})"
        raise BackendError(msg) from None
    if text.endswith(".pt2"):
        return _load_exported(Path(text))
    if ":" not in text and not text.endswith(".py"):
        msg = (
            f"torch model '{text}': expected a .pt2 file (torch.export), 'package.module:factory' "
            "or 'path/to/file.py:factory'"
        )
        raise BackendError(msg)
    return _load_factory(text)


def load_model_on_one_thread(model: Path | str) -> LoadedModel:
    """:func:`load_model` with torch on one intra-op thread, the count restored after. Build
    processes and round processes loading ahead run side by side, one per build core
    (``engine.scale``, ``engine.evaluate.round_prefetch``), each with torch's default of one
    thread per core: on a 16-core H100 host ConvNeXt-Tiny's factory (random weights) took
    0.3-0.5 s alone, 3.9-4.8 s with 4 fresh processes at once, 6.7-15.3 s with 12, and 10-27 s
    in a study's 15 round processes (docs/benchmarks.md, issue 38). The weights do not depend
    on the thread count; the build or measurement after it runs with the process's count."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return load_model(model)
    finally:
        torch.set_num_threads(threads)
