"""cumsum (Intel's tinytc v0.4): both dialects' syntax and printers, its located diagnostics,
the CPU runtime against the reference on every kind of edge (modes, orders, ragged and
dynamic sizes, subgroups sharing tiles, number types, alpha, beta, .atomic), bounds checks
and spirv-val for the GPU targets. Inputs are small integers, so that sums in any order are
exact and the device must agree with the reference bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import bf16, reference
from tinytc.errors import CompilationError
from tinytc.ir.printer import print_program
from tinytc.spirv.tools import disassemble, validate

DTYPES = {
    "f32": np.float32, "f64": np.float64, "i8": np.int8, "i32": np.int32,
    "c32": np.complex64, "c64": np.complex128,
}  # fmt: skip


def kernel(
    t: str, shape: tuple[int | None, ...], mode: int, alpha: str = "1", beta: str = "0",
    atomic: bool = False, attributes: str = "", out: str | None = None,
) -> str:  # fmt: skip
    m = f"memref<{t}x{'x'.join('?' if s is None else str(s) for s in shape)}>"
    flag = ".atomic" if atomic else ""
    return f"""func @k(%a: {m}, %b: {out or m}){attributes} {{
  cumsum{flag} {alpha}, %a, {mode}, {beta}, %b : {t}, {m}, {t}, {out or m}
}}
"""


def arrays(t: str, shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)

    def one() -> np.ndarray:
        x = rng.integers(-3, 4, shape).astype(DTYPES.get(t, np.float32))
        if t in ("c32", "c64"):
            x = x + 1j * rng.integers(-3, 4, shape)
        return np.asfortranarray(x.astype(DTYPES[t]) if t in DTYPES else x)

    return [one(), one()]


def run_both(
    text: str, t: str, shape: tuple[int, ...], howmany: int = 1, check_bounds: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    a, b = arrays(t, shape)
    got, want = b.copy(order="F"), b.copy(order="F")
    tinytc.jit(text, check_bounds=check_bounds).k(a, got, howmany=howmany)
    reference.run(tinytc.parse(text), "k", [a, want], howmany)
    return got, want


CASES = [  # (type, static shape, mode, dynamic, alpha, beta)
    ("f32", (37,), 0, False, "1", "0"),
    ("f32", (37, 13), 0, False, "2", "-1"),
    ("f64", (37, 13), 1, False, "1", "1"),
    ("f32", (5, 6, 7), 0, False, "1", "0"),
    ("i32", (5, 6, 7), 2, False, "-1", "2"),
    ("f32", (19, 21), 0, True, "1", "0"),
    ("f64", (19, 21), 1, True, "1", "0"),
    ("i8", (40, 3), 0, False, "50", "0"),  # wraps around in i8
    ("c32", (37, 5), 0, False, "[1, 2]", "0"),
    ("c64", (37, 5), 1, False, "1", "[0, 1]"),
    ("f64", (37, 5), 0, False, "1", "0"),  # 8 lanes: 64-bit shuffles in one register
    ("c64", (19, 3), 0, False, "[1, 2]", "1"),  # 8 lanes, each part shuffled
    ("f64", (64, 5), 1, False, "1", "0"),  # tiles of whole columns (8 blocks) by 2
    ("c64", (16, 7), 0, False, "1", "0"),  # short columns (2 blocks) in tiles of 4 columns
]


@pytest.mark.parametrize(("n", "tile"), [(16, (2, 4)), (64, (8, 1))])
def test_short_columns_down_the_rows_take_several_per_tile(n: int, tile: tuple[int, int]) -> None:
    """On the CPU, down the rows, whole columns of at most 2 blocks of 8 lanes (c64 n=16) in
    tiles of 4 columns; 8 blocks (n=64) one column per tile."""
    from tinytc.compiler import run_pipeline
    from tinytc.target import get_target

    passes = ["check-ir", "work-group-size", "tile-linalg"]
    text = str(run_pipeline(kernel("c64", (n, n), 0), get_target("cpu"), 2, passes=passes))
    assert f"rows_per_item={tile[0]}, cols_per_item={tile[1]}," in text


@pytest.mark.parametrize(("t", "shape", "mode", "dynamic", "alpha", "beta"), CASES)
def test_against_the_reference(
    t: str, shape: tuple[int, ...], mode: int, dynamic: bool, alpha: str, beta: str
) -> None:
    dims = tuple(None for _ in shape) if dynamic else shape
    got, want = run_both(kernel(t, dims, mode, alpha, beta), t, shape)
    a, b = arrays(t, shape)
    alpha_v, beta_v = (complex(*eval(x)) if x.startswith("[") else int(x) for x in (alpha, beta))
    closed = (alpha_v * np.cumsum(a, axis=mode, dtype=a.dtype) + beta_v * b).astype(a.dtype)
    np.testing.assert_array_equal(want, closed)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", [0, 1])
def test_subgroups_share_the_tiles(mode: int) -> None:
    """4 subgroups, tiles of 2 blocks of rows by 3 columns, ragged in both modes."""
    tiling = "work_group=[32, 2], rows_per_item=2, cols_per_item=3, k_unroll=1"
    text = kernel("f32", (70, 11), mode, attributes=" work_group_size(32,2) subgroup_size(16)")
    text = text.replace("f32x70x11>\n", f"f32x70x11> attributes{{tiling={{{tiling}}}}}\n")
    got, want = run_both(text, "f32", (70, 11))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("t", "sgs", "scan"),
    [("f64", None, "OpSubgroupShuffleUpINTEL"), ("c64", None, "OpSubgroupShuffleUpINTEL"),
     ("f32", None, "OpSubgroupShuffleUpINTEL"), ("f64", 16, "OpGroupFAdd")],
)  # fmt: skip
def test_scans_shuffle_in_one_register(t: str, sgs: int | None, scan: str) -> None:
    """On the CPU, lanes whose summed values fill one register (f64 and c64 8, f32 16) and
    scans of shuffles (the runtime's native scan walks the lanes one by one); 16 lanes of f64
    (given) keep the native scan (their shuffles went through memory). Right either way."""
    attributes = "" if sgs is None else f" subgroup_size({sgs})"
    text = kernel(t, (40, 3), 0, attributes=attributes)
    spirv = disassemble(tinytc.compile(text))
    assert f"SubgroupSize {sgs or (16 if t == 'f32' else 8)}" in spirv
    assert scan in spirv
    assert ("InclusiveScan" in spirv) == (scan == "OpGroupFAdd")
    got, want = run_both(text, t, (40, 3))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", [0, 1])
def test_batched_entries_fetch_the_next_entrys_b(mode: int) -> None:
    """B a view of the batch entry: the CPU fetches the next entry's B ahead of the stores
    (llvm.prefetch); results as numpy's, with bounds checks too."""
    batch = "memref<f64x37x5x?>"
    text = f"""func @k(%A: {batch}, %B: {batch}) {{
  %e = group_id
  %a = subview %A[:,:,%e] : {batch}
  %b = subview %B[:,:,%e] : {batch}
  cumsum 1.0, %a, {mode}, 0.0, %b : f64, memref<f64x37x5>, f64, memref<f64x37x5>
}}
"""
    assert "llvm.prefetch" in disassemble(tinytc.compile(text))
    a, b = arrays("f64", (37, 5, 3))
    for check_bounds in (False, True):
        got = b.copy(order="F")
        tinytc.jit(text, check_bounds=check_bounds).k(a, got, howmany=3)
        np.testing.assert_array_equal(got, np.cumsum(a, axis=mode))


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_half_types_sum_in_f32(t: str) -> None:
    """Summed in f32 and rounded once at the store: 2049 (not an f16) never appears midway."""
    text = kernel(t, (40,), 0)
    a = np.full(40, 1.0, np.float32)
    a[0] = 2040.0 if t == "f16" else 240.0
    as_t = bf16.to_bits if t == "bf16" else (lambda x: x.astype(np.float16))
    b = as_t(np.zeros(40, np.float32))
    got, want = b.copy(), b.copy()
    tinytc.jit(text).k(as_t(a), got, howmany=1)
    reference.run(tinytc.parse(text), "k", [as_t(a), want], 1)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(got.view(np.uint16), as_t(np.cumsum(a)).view(np.uint16))


def test_atomic_adds_of_many_groups() -> None:
    text = kernel("f64", (33, 4), 0, alpha="2", beta="1", atomic=True)
    a, b = arrays("f64", (33, 4))
    got = b.copy(order="F")
    tinytc.jit(text).k(a, got, howmany=5)
    np.testing.assert_array_equal(got, b + 5 * 2 * np.cumsum(a, axis=0))


def test_bounds_checks() -> None:
    """A view past A's end is reported at the subview; in range, the same result."""
    text = """func @k(%a: memref<f32x16x?>, %b: memref<f32x16x4>, %o: index) {
  %v = subview %a[:, %o:4] : memref<f32x16x?>
  cumsum 1.0, %v, 1, 0.0, %b : f32, memref<f32x16x4>, f32, memref<f32x16x4>
}
"""
    a = np.asfortranarray(np.arange(16 * 6, dtype=np.float32).reshape(16, 6, order="F"))
    b = np.zeros((16, 4), np.float32, order="F")
    kernels = tinytc.jit(text, check_bounds=True)
    kernels.k(a, b, 2, howmany=1)
    np.testing.assert_array_equal(b, np.cumsum(a[:, 2:], axis=1))
    with pytest.raises(tinytc.BoundsError, match="subview"):
        kernels.k(a, b, 3, howmany=1)


def test_both_dialects_print_and_parse_back() -> None:
    tiling = "tiling={work_group=[16, 1], rows_per_item=1, cols_per_item=4, k_unroll=1}"
    text = kernel("f32", (8, 4, 2), 2, "2.0", "1.0", atomic=True).replace(
        "f32x8x4x2>\n}", f"f32x8x4x2> attributes{{{tiling}}}\n}}"
    )
    program = tinytc.parse(text)
    assert print_program(program) == print_program(tinytc.parse(print_program(program)))
    v04 = print_program(program, "v0.4")
    assert "cumsum.atomic %0, %a, 2, %1, %b attributes{tiling=" in v04
    assert print_program(tinytc.parse(v04, dialect="v0.4")) == print_program(program)


def refused(text: str, match: str, where: str, dialect: str | None = None) -> None:
    """The error names ``match`` and points at the first ``where`` of the cumsum line (past
    its leading ', ')."""
    with pytest.raises(CompilationError, match=match) as e:
        tinytc.parse(text, dialect=dialect)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "cumsum" in s)
    column = text.splitlines()[line - 1].index(where) + 1 + len(where) - len(where.lstrip(", "))
    assert f":{line}.{column}" in str(e.value), str(e.value)


def test_diagnostics() -> None:
    refused(kernel("f32", (8, 4), 2), "mode 2 is not a mode of A", ", 2,")
    refused(kernel("f32", (8, 4), 0).replace("%a, 0,", "%a, 1.0,"), "integer literal", "1.0")
    refused(kernel("f32", (8, 4), 0, out="memref<f32x8x5>"), "B has shape 8x5", "cumsum")
    refused(kernel("f32", (8,), 0).replace("cumsum", "cumsum.t"), "takes .atomic", ".t")
    refused(kernel("f32", (8,), 0).replace(", f32, memref<f32x8>\n", "\n"), "4 types", "cumsum")
    refused(kernel("f32", (8,), 0, alpha="%b"), "has type memref", "%b,")
    v04 = "func @k(%a: memref<f32x8>, %b: memref<f32x8>) {\n"
    v04 += "  cumsum.atomic 1.0, %a, 0, 2.0, %b\n}\n"
    refused(v04, "beta of 0 or 1 in v0.4", "2.0", dialect="v0.4")


def test_a_tiling_it_cannot_execute_is_refused_at_the_instruction() -> None:
    tiling = "work_group=[16, 1], rows_per_item=1, cols_per_item=4, prefetch=1"
    text = kernel("f32", (8, 4), 0)
    text = text.replace("f32x8x4>\n}", f"f32x8x4> attributes{{tiling={{{tiling}}}}}\n}}")
    text = text.replace(") {", ") work_group_size(16,1) subgroup_size(16) {")
    with pytest.raises(CompilationError, match="cumsum takes no dpas") as e:
        tinytc.compile(text)
    assert ":2." in str(e.value)


@pytest.mark.parametrize(
    ("target", "t"), [("pvc", "f32"), ("pvc", "c64"), ("pvc", "i8"), ("dg2", "f32"), ("dg2", "c32")]
)  # dg2 has no f64
def test_validates_for_the_gpus(target: str, t: str) -> None:
    for mode in (0, 1):
        validate(tinytc.compile(kernel(t, (37, None), mode, beta="1"), target))


@pytest.mark.parametrize("mode", [0, 1])
def test_a_smaller_than_b_at_run_time_reads_zeros(mode: int) -> None:
    """Sizes known only at run time that differ: A is read where it has entries, never past
    its end (as the other collectives' checked loads); the tiles follow B."""
    text = kernel("f32", (None, None), mode)
    a = np.full((20, 3), 7.0, np.float32, order="F")
    a[:17, :] = arrays("f32", (17, 3))[0]
    b = np.zeros((21, 5), np.float32, order="F")
    tinytc.jit(text).k(a[:17], b, howmany=1)
    padded = np.zeros((21, 5), np.float32)
    padded[:17, :3] = a[:17]
    np.testing.assert_array_equal(b, np.cumsum(padded, axis=mode))
