"""What an instruction's reference semantics may ask of the interpreter.

An instruction class defines its semantics next to it, as a method ``interpret(self, f)``
(or, for element-wise ones, ``evaluate``): ``f`` is the interpreter's view of one
work-group's or one work-item's values (tinytc/reference.py's ``Frame``, the ``LaneView`` of
tinytc/reference_spmd.py, constant-fold's constants), and the method returns the
instruction's result (a list for instructions with several results or regions' yields). The
interpreter sits a layer above the IR, so the method sees it through the names of
``Interpreter`` only (duck typing, as the parse actions see the parser through
tinytc/ir/syntax.py); the interpreter keeps its machinery: frames, bounds errors, the numpy
storage of each type (bf16 as bits), and the spmd machine of parallel regions, whose
instructions register their semantics in its modules (reference_spmd.py, reference_coopmatrix.py,
reference_subgroup.py, reference_atomic.py; docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..errors import CompilationError
    from .core import Inst, Region, Value
    from .types import MemrefType, ScalarType


class Interpreter(Protocol):
    """The interpreter as an instruction's ``interpret`` sees it."""

    env: dict[Value, Any]  # the values defined so far (memrefs as numpy views)
    ids: tuple[int, int, int]  # this work-group's group_id in modes x, y, z
    counts: tuple[int, int, int]  # the launch's num_groups in modes x, y, z

    def get(self, v: Value) -> Any:
        """The value of an operand: a numpy scalar, a numpy view of a memref, a group."""

    def region(self, region: Region) -> list[Any]:
        """Run a nested region; the values of its yield."""

    def scalar(self, value: Any, t: ScalarType) -> Any:
        """A numpy scalar of type t (integers wrapped to it, bf16 rounded)."""

    def indices(self, inst: Inst, first: int, shape: Sequence[int]) -> tuple[int, ...]:
        """Operands ``first``.. as indices into ``shape``; one outside is a located error."""

    def load(self, arr: Any, idx: tuple[int, ...], t: ScalarType) -> Any:
        """Element ``idx`` of a memref of element type t (as its numpy storage holds it)."""

    def store(self, arr: Any, idx: tuple[int, ...], v: Any, t: ScalarType) -> None:
        """Write element ``idx`` of a memref of element type t."""

    def view(self, base: Any, shape: Sequence[int], stride: Sequence[int]) -> Any:
        """A view of ``shape`` and element ``stride`` of an array (memrefs are views)."""

    def allocate(self, t: MemrefType) -> Any:
        """Fresh memory for a memref of type t, filled so that reads before writes show."""

    def out_of_range(self, inst: Inst, operand: int | None, message: str) -> CompilationError:
        """The error of an access outside a memref (undefined behaviour), located at the
        instruction or its operand; the caller raises it."""

    def update(self, inst: Inst, compute: Callable[..., Any]) -> None:
        """A collective's ``out := alpha * compute(inputs...) + beta * out`` (out not read when
        beta is 0), the inputs in the type the instruction sums in."""
