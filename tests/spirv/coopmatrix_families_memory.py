"""Coopmatrix lowering families of loads and stores: copies across element types, uses,
shapes, transposes and subgroup sizes, checked accesses past either edge, and atomic adds.
TYPES are the element types the families run over; SHORT names a use in a kernel's name."""

from __future__ import annotations

import coopmatrix_support as cs

from tinytc.ir import (
    BF16,
    F16,
    F32,
    F64,
    I8,
    I32,
    I64,
    INDEX,
    ScalarType,
)

Buffer, Family, Spec, cm = cs.Buffer, cs.Family, cs.Spec, cs.cm
small, fetch, place = cs.small_values, cs.fetch, cs.place

TYPES = (F32, F64, F16, BF16, I8, I32)
SHORT = {"matrix_a": "a", "matrix_b": "b", "matrix_acc": "c"}

# Loads and stores


def copy_spec(el: ScalarType, use: str, rows: int, cols: int, tl: bool = False,
              ts: bool = False, sgs: int = 16, dynamic: bool = False,
              runtime_pos: bool = False) -> Spec:  # fmt: skip
    """Load at (x, y) of A (.n or .t) and store at (1, 0) of C (.n or .t), unchecked."""
    t = cm(el, rows, cols, use)
    x, y = 2, 1
    sr, sc = (cols, rows) if tl else (rows, cols)
    a = Buffer(el, x + sr + 1, y + sc + 2, ld=x + sr + 3, dynamic=dynamic)
    dr, dc = (cols, rows) if ts else (rows, cols)
    c = Buffer(el, dr + 2, dc + 1, dynamic=dynamic)
    name = f"copy_{el}_{SHORT[use]}{rows}x{cols}{'_lt' if tl else ''}{'_st' if ts else ''}"
    name += f"_s{sgs}" + ("_dyn" if dynamic else "") + ("_pos" if runtime_pos else "")
    params: list = [("A", a), ("C", c)] + ([("X", INDEX), ("Y", INDEX)] if runtime_pos else [])

    def body(kb, v):  # type: ignore[no-untyped-def]
        px, py = (v[2], v[3]) if runtime_pos else (x, y)
        kb.store(kb.load(t, v[0], px, py, tl), v[1], 1, 0, ts)

    return Spec(
        name, params, body,
        lambda r: {"A": small(el, a.shape, r), "C": small(el, c.shape, r), "X": x, "Y": y},
        lambda i: {"C": place(i["C"], 1, 0, fetch(i["A"], x, y, (rows, cols), tl), ts)},
        sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


def copy_specs() -> list[Spec]:
    specs = []
    shapes = [(5, 3), (16, 4), (20, 1), (37, 2), (32, 3), (9, 4)]
    for n, el in enumerate(TYPES):
        for u, use in enumerate(cs.USES):
            r1, c1 = shapes[(n + u) % len(shapes)]
            r2, c2 = shapes[(n + u + 3) % len(shapes)]
            specs.append(copy_spec(el, use, r1, c1))
            specs.append(copy_spec(el, use, r2, c2, tl=True, ts=u == 1))
    for use in cs.USES:  # every transpose combination, other subgroup sizes
        specs.append(copy_spec(F32, use, 20, 3, ts=True))
        specs.append(copy_spec(F32, use, 13, 2, tl=True, ts=True))
        specs.append(copy_spec(F32, use, 20, 3, sgs=8))
        specs.append(copy_spec(F32, use, 40, 2, tl=True, sgs=32))
        specs.append(copy_spec(F32, use, 4, 3, sgs=32, dynamic=True, runtime_pos=True))
    specs.append(copy_spec(I32, "matrix_acc", 20, 3, tl=True, dynamic=True, runtime_pos=True))
    specs.append(copy_spec(F16, "matrix_b", 7, 5, ts=True, dynamic=True, runtime_pos=True))
    return specs


COPY = Family("copy", copy_specs())


def checked_spec(el: ScalarType, use: str, rows: int, cols: int, transpose: bool, checked: str,
                 where: str, store: bool, dynamic: bool = False) -> Spec:  # fmt: skip
    """A checked load (or store) that runs past the memref's end ('past') or starts before
    it ('neg'), in the checked direction(s); the other side stays in bounds."""
    t = cm(el, rows, cols, use)
    # matrix rows run along memref mode 0 (.n) or 1 (.t), which has rows + 3 entries
    mr, mc = (cols + 2, rows + 3) if transpose else (rows + 3, cols + 2)
    start_r = (-3 if where == "neg" else 6) if checked in ("rows", "both") else 1
    start_c = (-1 if where == "neg" else 3) if checked in ("cols", "both") else 1
    x, y = (start_c, start_r) if transpose else (start_r, start_c)
    mem = Buffer(el, mr, mc, ld=mr + 1, dynamic=dynamic)
    mat = Buffer(el, rows, cols)
    kind = "st" if store else "ld"
    name = f"{kind}_{checked}_{where}_{el}_{SHORT[use]}{rows}x{cols}{'_t' if transpose else ''}"
    name += "_dyn" if dynamic else ""
    params = [("M", mem), ("C", mat), ("X", INDEX), ("Y", INDEX)]

    def body(kb, v):  # type: ignore[no-untyped-def]
        m, c, px, py = v
        if store:
            kb.store(kb.load(t, c), m, px, py, transpose, checked)
        else:
            kb.store(kb.load(t, m, px, py, transpose, checked), c)

    def expect(i):  # type: ignore[no-untyped-def]
        if store:
            return {"M": place(i["M"], x, y, i["C"], transpose, checked)}
        return {"C": fetch(i["M"], x, y, (rows, cols), transpose, checked)}

    return Spec(
        name, params, body,
        lambda r: {"M": small(el, mem.shape, r), "C": small(el, mat.shape, r), "X": x, "Y": y},
        expect,
    )  # fmt: skip


def checked_specs() -> list[Spec]:
    specs = []
    n = 0
    for store in (False, True):
        for use, rows, cols in (("matrix_acc", 20, 3), ("matrix_b", 7, 3), ("matrix_a", 5, 2)):
            for checked in ("rows", "cols", "both"):
                for where in ("neg", "past"):
                    transpose = (n // 2) % 2 == 1
                    el = TYPES[n % len(TYPES)]
                    specs.append(checked_spec(el, use, rows, cols, transpose, checked, where,
                                              store))  # fmt: skip
                    n += 1
    specs += [
        checked_spec(F32, "matrix_acc", 20, 3, False, "both", "neg", False, dynamic=True),
        checked_spec(I32, "matrix_b", 6, 2, True, "rows", "past", True, dynamic=True),
        checked_spec(F16, "matrix_a", 17, 2, True, "cols", "neg", True, dynamic=True),
    ]
    return specs


CHECKED = Family("checked", checked_specs())


def constant_position_spec() -> Spec:
    """Checked accesses at compile-time positions, negative ones too (folded offsets)."""
    t = cm(F32, 20, 3, "matrix_acc")
    b = cm(F32, 6, 3, "matrix_b")
    mem = Buffer(F32, 22, 5)
    out = Buffer(F32, 20, 3)
    outb = Buffer(F32, 6, 3)

    def body(kb, v):  # type: ignore[no-untyped-def]
        m, c, d, e = v
        kb.store(kb.load(t, m, -4, -1, checked="both"), c)
        kb.store(kb.load(b, m, 19, 3, checked="both"), d)
        kb.store(kb.load(t, c), e, 18, -2, checked="both")

    return Spec(
        "checked_constant_positions", [("M", mem), ("C", out), ("D", outb), ("E", mem)], body,
        lambda r: {k: small(F32, s.shape, r) for k, s in (("M", mem), ("C", out), ("D", outb),
                                                           ("E", mem))},
        lambda i: {
            "C": fetch(i["M"], -4, -1, (20, 3), checked="both"),
            "D": fetch(i["M"], 19, 3, (6, 3), checked="both"),
            "E": place(i["E"], 18, -2, fetch(i["M"], -4, -1, (20, 3), checked="both"),
                       checked="both"),
        },
    )  # fmt: skip


CHECKED.specs.append(constant_position_spec())


def atomic_spec(el: ScalarType, use: str, rows: int, cols: int, checked: str = "",
                transpose: bool = False) -> Spec:  # fmt: skip
    """Three work-groups add the same matrix into one C (at a shifted, checked position)."""
    t = cm(el, rows, cols, use)
    x, y = (-2, 1) if checked else (1, 0)
    c = Buffer(el, cols + 2, rows + 1) if transpose else Buffer(el, rows + 1, cols + 2)
    a = Buffer(el, rows, cols)
    name = f"atomic_{el}_{SHORT[use]}{rows}x{cols}{'_' + checked if checked else ''}"
    name += "_t" if transpose else ""

    def body(kb, v):  # type: ignore[no-untyped-def]
        kb.store(kb.load(t, v[0]), v[1], x, y, transpose, checked, atomic_add=True)

    return Spec(
        name, [("A", a), ("C", c)], body,
        lambda r: {"A": small(el, a.shape, r), "C": small(el, c.shape, r)},
        lambda i: {"C": place(i["C"], x, y, i["A"], transpose, checked, add=3)},
        howmany=3,
    )  # fmt: skip


ATOMIC = Family("atomic", [
    atomic_spec(F32, "matrix_acc", 20, 3),
    atomic_spec(F64, "matrix_acc", 16, 2, "rows"),
    atomic_spec(I32, "matrix_acc", 5, 4, "both", transpose=True),
    atomic_spec(I64, "matrix_acc", 33, 1),
    atomic_spec(F32, "matrix_b", 7, 3, "rows"),
    atomic_spec(I32, "matrix_b", 4, 2),
    atomic_spec(F32, "matrix_a", 17, 2, "both"),
])  # fmt: skip
