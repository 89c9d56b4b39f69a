"""What the invalid coopmatrix programs are built of: a function or parallel region around
body lines, the usual types, and the instructions, each on a known line."""

from __future__ import annotations


def func(body: str, params: str = "") -> str:
    """A function around body lines (line 2 is the first body line)."""
    return f"func @f({params}) work_group_size(16,1) subgroup_size(16) {{\n{body}\n}}\n"


def par(body: str, params: str = "") -> str:
    """A parallel region around body lines (line 3 is the first body line)."""
    return func(f"  parallel {{\n{body}\n  }}", params)


ACC = "coopmatrix<f32x16x8,matrix_acc>"
MA = "coopmatrix<f32x16x8,matrix_a>"
MB = "coopmatrix<f32x8x8,matrix_b>"
MEMREF = "memref<f32x32x32>"


def construct(name: str, t: str = ACC, value: str = "0.0") -> str:
    return f"    %{name} = cooperative_matrix_construct {value} : {t}"


def mul_add(ta: str, tb: str, tc: str) -> str:
    """%a, %b, %c of the given types on lines 3-5, their mul_add on line 6."""
    return par(
        "\n".join(
            [
                construct("a", ta),
                construct("b", tb),
                construct("c", tc),
                f"    %d = cooperative_matrix_mul_add %a, %b, %c : {ta}, {tb}, {tc}",
            ]
        )
    )


def apply(*body: str) -> str:
    """%c on line 3, an apply of it on line 4, its body from line 5."""
    header = f"    %r = cooperative_matrix_apply (%i, %j, %v) = %c : {ACC} {{"
    return "\n".join([construct("c"), header, *body, "    }"])


def load(flags: str = "", result: str = f"-> {MA}", memref: str = MEMREF, at: str = "0, 0") -> str:
    return par(
        f"    %a = cooperative_matrix_load{flags} %M[{at}] : {memref} {result}".rstrip(),
        f"%M: {memref}",
    )


def store(flags: str, t: str = ACC, memref: str = MEMREF) -> str:
    value = "0" if t.startswith("coopmatrix<i") else "0.0"
    return par(
        f"{construct('c', t, value)}\n"
        f"    cooperative_matrix_store{flags} %c, %M[0, 0] : {t}, {memref}",
        f"%M: {memref}",
    )
