"""v0.4's parameter attributes (its manual, "Parameter attributes"): promises about the arrays
a call passes for a memref or group parameter, which the call checks (tinytc.arguments):

- ``alignment=X``: the base address of the memref (of each member of a group) is a multiple
  of X bytes; X is a power of two and a multiple of the element size;
- ``shape_gcd=[d1, ...]``: mode i's size is a multiple of di (for the first modes);
- ``stride_gcd=[D1, ...]``: mode i's stride, in elements, is a multiple of Di.
"""

from __future__ import annotations

from typing import Any

from .types import GroupType, MemrefType, Type

NAMES = ("alignment", "shape_gcd", "stride_gcd")


def check_param_attributes(t: Type, attrs: dict[str, Any]) -> dict[str, Any]:
    """The attributes of a parameter of type t, or ValueError saying what is wrong (a
    static size or stride that breaks its own gcd included)."""
    unknown = sorted(set(attrs) - set(NAMES))
    if unknown:
        raise ValueError(
            f"unknown parameter attribute {unknown[0]} (alignment, shape_gcd or stride_gcd)"
        )
    memref = t.memref if isinstance(t, GroupType) else t
    if not isinstance(memref, MemrefType):
        raise ValueError(f"parameter attributes belong to a memref or group, not {t}")
    size = memref.element.size
    alignment = attrs.get("alignment")
    if alignment is not None and (
        type(alignment) is not int
        or alignment < size
        or alignment & (alignment - 1)
        or alignment % size
    ):
        raise ValueError(
            f"alignment must be a power of two and a multiple of the element size {size}, got "
            f"{alignment}"
        )
    for name, known in (("shape_gcd", memref.shape), ("stride_gcd", memref.stride)):
        gcds = attrs.get(name)
        if gcds is None:
            continue
        if not isinstance(gcds, list) or any(type(d) is not int or d < 1 for d in gcds):
            raise ValueError(f"{name} must be a list of positive integers, got {gcds}")
        if len(gcds) > memref.order:
            raise ValueError(f"{name} has {len(gcds)} entries, more than the order {memref.order}")
        for mode, (d, s) in enumerate(zip(gcds, known)):
            if s is not None and s % d:
                raise ValueError(f"{name}[{mode}] = {d} does not divide {s}, the type's own")
    return dict(attrs)


def violation(
    attrs: dict[str, Any], address: int, shape: tuple[int, ...], stride: tuple[int, ...]
) -> str | None:
    """Why an array of this address (bytes), shape and strides (elements) breaks the promises,
    or None. A mode of size 0 or 1 has no meaningful stride and is not checked."""
    alignment = attrs.get("alignment")
    if alignment is not None and address % alignment:
        return f"its address {address:#x} is not a multiple of alignment={alignment}"
    for mode, d in enumerate(attrs.get("shape_gcd", ())):
        if shape[mode] % d:
            return f"its size {shape[mode]} in mode {mode} is not a multiple of shape_gcd {d}"
    for mode, d in enumerate(attrs.get("stride_gcd", ())):
        if shape[mode] > 1 and stride[mode] % d:
            return f"its stride {stride[mode]} in mode {mode} is not a multiple of stride_gcd {d}"
    return None
