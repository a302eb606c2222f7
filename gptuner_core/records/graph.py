"""One call node of a model's traced graph (Dynamo's FX graph on the torch backend)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceNode:
    """One call node of Dynamo's graph: its module path (``""`` outside a submodule),
    module class, target name and data inputs (other call nodes)."""

    name: str
    target: str
    module: str = ""
    module_type: str = ""
    inputs: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        return self.module or self.name

    @property
    def op(self) -> str:
        return self.module_type or self.target
