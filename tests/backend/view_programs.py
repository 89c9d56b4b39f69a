"""Programs that read and write every element of memref views, for the execution tests of
subview, expand, fuse, load and store.

``view_kernel`` writes a kernel whose preamble defines views; then, for every view in turn,
one foreach phase copies the view into a dense output (``out[idx] = view[idx]``), stores a
tag that encodes the position into the view (``view[idx] = tag + i + 100 j + 10000 k``) and
records the view's mode sizes. The device and the reference must agree on all of it, which
checks the offsets, sizes and strides of the views and the addressing of load and store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import tinytc
from tinytc.ir import MemrefType


@dataclass
class View:
    name: str  # the SSA name, without %
    definition: str  # "subview %a[...] : memref<...>" or a parameter's name


def _view_types(params: str, views: Sequence[View]) -> dict[str, MemrefType]:
    lines = "\n  ".join(f"%{v.name} = {v.definition}" for v in views if " " in v.definition)
    func = tinytc.parse(f"func @probe({params}) {{\n  {lines}\n}}").functions[0]
    types: dict[str, MemrefType] = {p.name: p.type for p in func.params}  # type: ignore[misc]
    for inst in func.walk():
        for r in inst.results:
            types[r.name] = r.type  # type: ignore[index, assignment]
    return types


def _tag_value(p: str, el: str, idx: list[str], tag: int) -> list[str]:
    """IR computing tag + i + 100 j + 10000 k as ``%{p}_tag`` of element type ``el``."""
    weights = [1, 100, 10_000, 1_000_000]
    lines = [f"%{p}_t0 = arith.add {idx[0]}, {tag} : index"] if idx else []
    last = f"%{p}_t0" if idx else None
    for m in range(1, len(idx)):
        lines += [f"%{p}_w{m} = arith.mul {idx[m]}, {weights[m]} : index"]
        lines += [f"%{p}_t{m} = arith.add %{p}_t{m - 1}, %{p}_w{m} : index"]
        last = f"%{p}_t{m}"
    if last is None:
        lines += [f"%{p}_t0 = cast {tag} : i32 -> index"]
        last = f"%{p}_t0"
    return lines + [f"%{p}_tag = cast {last} : index -> {el}"]


def roundtrip(view: str, t: MemrefType, out: str, sizes: str, first_size: int) -> list[str]:
    """One foreach phase: out = view, view = tags, sizes[first_size + m] = size of mode m."""
    p, order, el = view, t.order, str(t.element)
    dense = "memref<" + "x".join([el] + ["?"] * order) + ">"
    lines = [f"%{p}_n{m} = size %{view}[{m}] : {t}" for m in range(order)]
    idx = [f"%{p}_i{m}" for m in range(order)]
    inner = [f"%{p}_v = load %{view}[{','.join(idx)}] : {t}"]
    inner += [f"store %{p}_v, %{out}[{','.join(idx)}] : {dense}"]
    inner += _tag_value(p, el, idx, 1000 * (first_size + 1))
    inner += [f"store %{p}_tag, %{view}[{','.join(idx)}] : {t}"]
    for m in range(max(order - 1, 0)):  # sequential loops over the inner modes
        inner = [f"for {idx[m]} = 0, %{p}_n{m} {{", *("  " + x for x in inner), "}"]
    last = f"{idx[-1]} = 0, %{p}_n{order - 1}" if order else f"%{p}_z = 0, 1"
    head = f"foreach {last} {{"
    record = [f"store %{p}_n{m}, %{sizes}[{first_size + m}] : memref<indexx?>"
              for m in range(order)]  # fmt: skip
    return [*lines, head, *("  " + x for x in inner + record), "}"]


def dense_out_type(t: MemrefType) -> str:
    return "memref<" + "x".join([str(t.element)] + ["?"] * t.order) + ">"


def view_kernel(name: str, params: str, views: Sequence[View]) -> tuple[str, list[MemrefType]]:
    """A kernel taking ``params``, then one dense output per view (all modes dynamic), then
    ``%sizes: memref<indexx?>``; returns its text and the view types."""
    types = _view_types(params, views)
    vtypes = [types[v.name] for v in views]
    outs = [f"%out_{v.name}: {dense_out_type(t)}" for v, t in zip(views, vtypes)]
    body = [f"%{v.name} = {v.definition}" for v in views if " " in v.definition]
    first = 0
    for v, t in zip(views, vtypes):
        body += roundtrip(v.name, t, f"out_{v.name}", "sizes", first)
        first += max(t.order, 1)
    head = f"func @{name}({', '.join([params, *outs, '%sizes: memref<indexx?>'])}) {{"
    return "\n".join([head, *("  " + x for x in body), "}"]) + "\n", vtypes


def size_slots(vtypes: Sequence[MemrefType]) -> int:
    return sum(max(t.order, 1) for t in vtypes)
