"""How Intel's tinytc v0.4 writes each instruction where it differs from rev2 (the classes'
own ``print``): annotations give result types, operands are identifiers (the Printer defines
constants first), comparisons and builtins have their own words (docs/language.md,
"Dialects"). Only the positions v0.4 writes as integer literals take literals here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import instructions as ir
from .core import Function, Inst
from .instructions.loops import unroll_attribute
from .printer import Printer, format_attribute
from .types import I1, GroupType

PRINTERS: dict[type, Callable[[Any, Printer], None]] = {}
WORDS = {
    "eq": "equal",
    "ne": "not_equal",
    "gt": "greater_than",
    "ge": "greater_than_equal",
    "lt": "less_than",
    "le": "less_than_equal",
}


def prints(*classes: type[Inst]) -> Callable[[Callable[[Any, Printer], None]], Any]:
    def add(fn: Callable[[Any, Printer], None]) -> Callable[[Any, Printer], None]:
        for cls in classes:
            PRINTERS[cls] = fn
        return fn

    return add


def type_v04(t: object) -> str:
    if t == I1:
        return "bool"
    if isinstance(t, GroupType):
        offset = "" if t.offset == 0 else f", offset: {'?' if t.offset is None else t.offset}"
        return f"group<{t.memref}x{'?' if t.size is None else t.size}{offset}>"
    return str(t)


def function_attributes(func: Function) -> str:
    attrs: dict[str, Any] = {}
    if func.work_group_size is not None:
        attrs["work_group_size"] = list(func.work_group_size)
    if func.subgroup_size is not None:
        attrs["subgroup_size"] = func.subgroup_size
    if func.batch_per_group != 1:
        attrs["batch_per_group"] = func.batch_per_group
    return f" attributes{format_attribute(attrs)}" if attrs else ""


def _result(p: Printer, inst: Inst, text: str) -> None:
    p.line(f"{p.lhs(inst)}{text} : {p.type(inst.results[0].type)}")


@prints(ir.ArithInst)
def _arith(inst: ir.ArithInst, p: Printer) -> None:
    a, b = inst.operands
    _result(p, inst, f"{inst.op} {p.name(a)}, {p.name(b)}")


@prints(ir.ArithUnaryInst)
def _arith_unary(inst: ir.ArithUnaryInst, p: Printer) -> None:
    _result(p, inst, f"{inst.op} {p.name(inst.operands[0])}")


@prints(ir.CastInst)
def _cast(inst: ir.CastInst, p: Printer) -> None:
    _result(p, inst, f"cast {p.name(inst.operands[0])}")


@prints(ir.CompareInst)
def _compare(inst: ir.CompareInst, p: Printer) -> None:
    a, b = inst.operands
    _result(p, inst, f"{WORDS[inst.cond]} {p.name(a)}, {p.name(b)}")


@prints(ir.GroupIdInst, ir.GroupSizeInst)
def _group(inst: ir.GroupIdInst, p: Printer) -> None:
    word = "group_id" if type(inst) is ir.GroupIdInst else "num_groups"
    _result(p, inst, f"{word}.{inst.mode}")


@prints(*ir.SUBGROUP_BUILTINS)
def _subgroup(inst: Any, p: Printer) -> None:
    if isinstance(inst, ir.SubgroupIdInst) and not inst.mode:
        word = "subgroup_linear_id"
    else:
        word = inst.mnemonic + (f".{inst.mode}" if inst.mode else "")
    _result(p, inst, word)


@prints(ir.YieldInst)
def _yield(inst: ir.YieldInst, p: Printer) -> None:
    p.line(f"yield ({p.names(inst.operands)})")


@prints(ir.IfInst)
def _if(inst: ir.IfInst, p: Printer) -> None:
    header = f"{p.lhs(inst)}if {p.name(inst.operands[0])}"
    if inst.result_types:
        header += " -> (" + ", ".join(map(p.type, inst.result_types)) + ")"
    p.open(header)
    p.region(inst.then)
    if inst.otherwise.insts or inst.result_types:
        p.close("} else {")
        p.region(inst.otherwise)
    p.close("}")


@prints(ir.ForInst)
def _for(inst: ir.ForInst, p: Printer) -> None:
    bounds = [p.name(v) for v in inst.bounds]  # constants are defined with the loop type
    header = f"{p.lhs(inst)}for {p.name(inst.var)}={','.join(bounds)}"
    if inst.init:
        pairs = ",".join(f"{p.name(a)}={p.name(v)}" for a, v in zip(inst.carried, inst.init))
        header += f" init({pairs}) -> ({','.join(p.type(v.type) for v in inst.init)})"
    p.open(header)
    p.region(inst.body)
    p.close("}" + unroll_attribute(inst))


@prints(ir.ForeachInst)
def _foreach(inst: ir.ForeachInst, p: Printer) -> None:
    names, starts, stops = ([p.name(v) for v in vs] for vs in (inst.vars, inst.starts, inst.stops))
    p.open(f"foreach ({','.join(names)})=({','.join(starts)}),({','.join(stops)})")
    p.region(inst.body)
    p.close("}")


@prints(ir.ForeachTileInst)
def _foreach_tile(inst: ir.ForeachTileInst, p: Printer) -> None:
    def group(values: list[Any]) -> str:
        return "(" + ",".join(p.name(v) for v in values) + ")"

    shape = ",".join(map(str, inst.tile_shape))
    p.open(
        f"foreach_tile {group(inst.offsets)}={group(inst.starts)},{group(inst.stops)}"
        f" as {group(inst.sizes)}<=({shape})"
    )
    p.region(inst.body)
    p.close("}")


@prints(ir.AllocaInst)
def _alloca(inst: ir.AllocaInst, p: Printer) -> None:
    _result(p, inst, "alloca")


@prints(ir.LoadInst)
def _load(inst: ir.LoadInst, p: Printer) -> None:
    src, *idx = inst.operands
    _result(p, inst, f"load {p.name(src)}[{p.names(idx)}]")


@prints(ir.StoreInst)
def _store(inst: ir.StoreInst, p: Printer) -> None:
    v, m, *idx = inst.operands
    p.line(f"store {p.name(v)}, {p.name(m)}[{p.names(idx)}]")


@prints(ir.SubviewInst)
def _subview(inst: ir.SubviewInst, p: Printer) -> None:
    parts = []
    for kind, off, size in inst.slices():
        text = p.literal(inst.operands[off])
        if kind == "rest" and inst.operands[off].constant == 0:
            text = ":"  # ':' and 'offset:?' (to the end) are tinytc's, as in rev2
        elif kind == "slice":
            text += ":" + p.literal(inst.operands[size])  # type: ignore[index]
        elif kind == "rest":
            text += ":?"
        parts.append(text)
    _result(p, inst, f"subview {p.name(inst.operands[0])}[{','.join(parts)}]")


@prints(ir.ExpandInst)
def _expand(inst: ir.ExpandInst, p: Printer) -> None:
    src = inst.operands[0]
    parts = ["?" if i is None else p.literal(inst.operands[i]) for i in inst.entries()]
    _result(p, inst, f"expand {p.name(src)}[{inst.mode}->{' x '.join(parts)}]")


@prints(ir.FuseInst)
def _fuse(inst: ir.FuseInst, p: Printer) -> None:
    _result(p, inst, f"fuse {p.name(inst.operands[0])}[{inst.first},{inst.last}]")


@prints(ir.AssociatedInst)
def _associated(inst: ir.AssociatedInst, p: Printer) -> None:
    _result(p, inst, f"associated {p.name(inst.operands[0])}")


@prints(ir.SizeInst)
def _size(inst: ir.SizeInst, p: Printer) -> None:
    _result(p, inst, f"size {p.name(inst.operands[0])}[{inst.mode}]")


@prints(ir.GemmInst, ir.GemvInst, ir.GerInst, ir.HadamardProductInst, ir.AxpbyInst, ir.SumInst)
def _linalg(inst: ir.LinalgInst, p: Printer) -> None:
    word = "hadamard" if isinstance(inst, ir.HadamardProductInst) else inst.mnemonic
    flags = (".atomic" if inst.atomic else "") + "".join(
        ".t" if t else ".n" for t in inst.transposes
    )
    tiling = f" attributes{{tiling={format_attribute(inst.tiling)}}}" if inst.tiling else ""
    p.line(f"{word}{flags} {p.names(inst.operands)}{tiling}")


@prints(ir.CumsumInst)
def _cumsum(inst: ir.CumsumInst, p: Printer) -> None:
    alpha, a, beta, b = (p.name(v) for v in inst.operands)
    atomic = ".atomic" if inst.atomic else ""
    tiling = f" attributes{{tiling={format_attribute(inst.tiling)}}}" if inst.tiling else ""
    p.line(f"cumsum{atomic} {alpha}, {a}, {inst.mode}, {beta}, {b}{tiling}")


def _access(inst: Any) -> str:
    return (".t" if inst.transpose else ".n") + (f".{inst.checked}_checked" if inst.checked else "")


@prints(ir.CoopMatrixLoadInst)
def _cm_load(inst: ir.CoopMatrixLoadInst, p: Printer) -> None:
    m, x, y = (p.name(v) for v in inst.operands)
    _result(p, inst, f"cooperative_matrix_load{_access(inst)} {m}[{x},{y}]")


@prints(ir.CoopMatrixStoreInst)
def _cm_store(inst: ir.CoopMatrixStoreInst, p: Printer) -> None:
    v, m, x, y = (p.name(v) for v in inst.operands)
    flags = _access(inst) + (".atomic_add" if inst.atomic_add else "")
    p.line(f"cooperative_matrix_store{flags} {v}, {m}[{x},{y}]")


@prints(ir.CoopMatrixMulAddInst)
def _cm_mul_add(inst: Inst, p: Printer) -> None:
    _result(p, inst, f"cooperative_matrix_mul_add {p.names(inst.operands)}")


@prints(ir.CoopMatrixScaleInst)
def _cm_scale(inst: Inst, p: Printer) -> None:
    _result(p, inst, f"cooperative_matrix_scale {p.names(inst.operands)}")


@prints(ir.CoopMatrixConstructInst)
def _cm_construct(inst: Inst, p: Printer) -> None:
    v = inst.operands[0]
    if v.constant is not None and v.owner is None:
        _result(p, inst, f"constant {p.literal(v)}")
    else:
        _result(p, inst, f"cooperative_matrix_construct {p.name(v)}")


@prints(ir.CoopMatrixApplyInst)
def _cm_apply(inst: ir.CoopMatrixApplyInst, p: Printer) -> None:
    m = inst.operands[0]
    head = f"{p.lhs(inst)}cooperative_matrix_apply ({p.names(inst.body.params)})={p.name(m)}"
    p.open(f"{head} -> {inst.results[0].type}")
    p.region(inst.body)
    p.close("}")


@prints(ir.CoopMatrixExtractInst)
def _cm_extract(inst: ir.CoopMatrixExtractInst, p: Printer) -> None:
    _result(p, inst, f"cooperative_matrix_extract {p.name(inst.operands[0])}[{inst.index}]")


@prints(ir.CoopMatrixReduceInst)
def _cm_reduce(inst: ir.CoopMatrixReduceInst, p: Printer) -> None:
    m = p.name(inst.operands[0])
    _result(p, inst, f"cooperative_matrix_reduce_{inst.op}.{inst.mode} {m}")


@prints(ir.CoopMatrixPrefetchInst)
def _cm_prefetch(inst: ir.CoopMatrixPrefetchInst, p: Printer) -> None:
    m, x, y = (p.name(v) for v in inst.operands)
    p.line(
        f"cooperative_matrix_prefetch {inst.cache_level}, {m}[{x},{y}], {inst.rows}, {inst.cols}"
    )


def _memory(inst: Any) -> str:
    from .instructions.atomic import DEFAULT_SCOPE, DEFAULT_SEMANTICS

    out = f".{inst.scope}" if inst.scope != DEFAULT_SCOPE else ""
    return out + (f".{inst.semantics}" if inst.semantics != DEFAULT_SEMANTICS else "")


@prints(ir.CoopMatrixAtomicLoadInst)
def _cm_atomic_load(inst: ir.CoopMatrixAtomicLoadInst, p: Printer) -> None:
    m, x, y = (p.name(v) for v in inst.operands)
    _result(p, inst, f"{inst.mnemonic}{_access(inst)}{_memory(inst)} {m}[{x},{y}]")


@prints(ir.CoopMatrixAtomicStoreInst, ir.CoopMatrixAtomicUpdateInst)
def _cm_atomic_store(inst: ir.CoopMatrixAtomicStoreInst, p: Printer) -> None:
    v, m, x, y = (p.name(v) for v in inst.operands)
    text = f"{inst.print_name}{_access(inst)}{_memory(inst)} {v}, {m}[{x},{y}]"
    if inst.results:  # an update
        _result(p, inst, text)
    else:
        p.line(text)
