"""Diagnostic cases: regions (functions, loops, if, parallel) and what they may hold."""

from __future__ import annotations

from diagnostic_support import case, func

REGIONS = [
    case(
        "collective-in-foreach",
        func(
            "  foreach %i = 0, 4 {\n    axpby.n 1.0, %a, 0.0, %a : f32, memref<f32x4>, f32, "
            "memref<f32x4>\n  }",
            "%a: memref<f32x4>",
        ),
        "axpby is a collective instruction and cannot appear inside foreach",
        "<input>:3.5-69",
    ),
    case(
        "alloca-in-foreach",
        func("  foreach %i = 0, 4 {\n    %t = alloca -> memref<f32x4>\n  }"),
        "alloca is a collective instruction and cannot appear inside foreach",
        "<input>:3.10-32",
    ),
    case(
        "collective-in-if-in-foreach",
        func(
            "  foreach %i = 0, 4 {\n    if true {\n      axpby.n 1.0, %a, 0.0, %a : f32, "
            "memref<f32x4>, f32, memref<f32x4>\n    }\n  }",
            "%a: memref<f32x4>",
        ),
        "axpby is a collective instruction and cannot appear inside foreach",
        "<input>:4.7-71",
    ),
    case(
        "nested-foreach",
        func("  foreach %i = 0, 4 {\n    foreach %j = 0, 4 {\n    }\n  }"),
        "foreach cannot be nested in foreach",
        "<input>:3.5-22",
    ),
    case(
        "foreach-in-for-in-foreach",
        func(
            "  foreach %i = 0, 4 {\n    for %j = 0, 4 {\n      foreach %k = 0, 4 {\n      }\n"
            "    }\n  }"
        ),
        "foreach cannot be nested in foreach",
        "<input>:4.7-24",
    ),
    case(
        "barrier-in-foreach",
        func("  foreach %i = 0, 4 {\n    barrier\n  }"),
        "barrier cannot appear inside foreach",
        "<input>:3.5-11",
    ),
    case(
        "alloca-dynamic",
        func("  %t = alloca -> memref<f32x4x?>"),
        "alloca needs a static shape and stride, got memref<f32x4x?>",
        "<input>:2.8-32",
    ),
    case(
        "alloca-dynamic-stride",
        func("  %t = alloca -> memref<f32x4x4,strided<1,?>>"),
        "alloca needs a static shape and stride",
        "<input>:2.8-45",
    ),
    case(
        "if-results-without-else",
        func(
            "  %c = cmp.eq %a, 0 : i32\n  %r = if %c -> (i32) {\n    yield %a : i32\n  }", "%a: i32"
        ),
        "the else region must end with yield: the if has results",
        "<input>:3.8-21",
    ),
    case(
        "if-results-missing-yield",
        func(
            "  %c = cmp.eq %a, 0 : i32\n  %r = if %c -> (i32) {\n    %b = arith.add %a, 1 : i32\n"
            "  } else {\n    yield %a : i32\n  }",
            "%a: i32",
        ),
        "the then region must end with yield: the if has results",
        "<input>:3.8-21",
    ),
    case(
        "yield-type-mismatch",
        func(
            "  %c = cmp.eq %a, 0 : i32\n  %r = if %c -> (i32) {\n    yield %a : i32\n  } else {\n"
            "    %x = cast %a : i32 -> f32\n    yield %x : f32\n  }",
            "%a: i32",
        ),
        "yield gives (f32); the if returns i32",
        "<input>:7.5-18",
    ),
    case(
        "yield-count-mismatch",
        func(
            "  %r = if true -> (f32) {\n    yield %a : f32, f32\n  } else {\n"
            "    yield %a : f32\n  }",
            "%a: f32",
        ),
        "yield has 1 values but 2 types",
        "<input>:3.5-23",
    ),
    case(
        "yield-in-if-without-results",
        func("  if true {\n    yield %a : i32\n  }", "%a: i32"),
        "yield gives (i32); the if returns nothing",
        "<input>:3.5-18",
    ),
    case(
        "yield-not-last-in-if",
        func(
            "  %c = cmp.eq %a, 0 : i32\n  if %c {\n    yield :\n    %b = arith.add %a, 1 : i32\n"
            "  }",
            "%a: i32",
        ),
        "yield must be the last instruction of its region",
        "<input>:4.5-11",
    ),
    case(
        "yield-not-last-in-for",
        func("  for %i = 0, 4 {\n    yield :\n    barrier\n  }"),
        "yield must be the last instruction of its region",
        "<input>:3.5-11",
    ),
    case(
        "yield-in-function",
        func("  yield %a : i32", "%a: i32"),
        "yield can only end the region of an if, a for or a cooperative_matrix_apply",
        "<input>:2.3-16",
    ),
    case(
        "yield-in-foreach",
        func("  foreach %i = 0, 4 {\n    yield :\n  }"),
        "yield can only end the region of an if, a for or a cooperative_matrix_apply",
        "<input>:3.5-11",
    ),
    case(
        "for-yields-values",
        func("  for %i = 0, 4 {\n    yield %a : i32\n  }", "%a: i32"),
        "yield gives (i32); the for returns nothing",
        "<input>:3.5-18",
    ),
    case(
        "for-results-missing-yield",
        func("  %s = for %i = 0, 4 init(%a = 0.0) -> (f32) {\n  }"),
        "the for body must end with yield: the for has results",
        "<input>:2.8-44",
    ),
    case(
        "for-init-count-mismatch",
        func("  %s = for %i = 0, 4 init(%a = 0.0, %b = 1) -> (f32) {\n    yield %a : f32\n  }"),
        "init has 2 values but 1 types",
        "<input>:2.22-52",
    ),
    case(
        "for-init-type-mismatch",
        func("  %s = for %i = 0, 4 init(%a = %x) -> (f32) {\n    yield %a : f32\n  }", "%x: i32"),
        "%x has type i32, but f32 is written",
        "<input>:2.32-33",
    ),
    case(
        "for-yield-type-mismatch",
        func(
            "  %s = for %i = 0, 4 init(%a = 0.0) -> (f32) {\n    %c = cast %a : f32 -> f64\n"
            "    yield %c : f64\n  }"
        ),
        "yield gives (f64); the for returns f32",
        "<input>:4.5-18",
    ),
    case(
        "carried-value-after-for",
        func(
            "  %s = for %i = 0, 4 init(%a = 0.0) -> (f32) {\n    yield %a : f32\n  }\n"
            "  %b = arith.add %a, %s : f32"
        ),
        "%a is defined in a region that has ended (at <input>:2.27-28)",
        "<input>:5.18-19",
    ),
    case(
        "if-memref-result",
        func(
            "  %r = if true -> (memref<f32x4>) {\n    yield %a : memref<f32x4>\n  }",
            "%a: memref<f32x4>",
        ),
        "if can only return scalars, got memref<f32x4>",
        "<input>:2.8-33",
    ),
    case(
        "if-condition-i32",
        func("  if %x {\n  }", "%x: i32"),
        "if condition must have type i1, got i32",
        "<input>:2.6-7",
    ),
    case(
        "for-step-zero",
        func("  for %i = 0, 10, 0 {\n  }"),
        "step must be positive, got 0",
        "<input>:2.19-19",
    ),
    case(
        "for-four-bounds",
        func("  for %i = 0, 1, 2, 3 {\n  }"),
        "for takes bounds from, to [, step], got 4 values",
        "<input>:2.3-22",
    ),
    case(
        "foreach-with-step",
        func("  foreach %i = 0, 4, 1 {\n  }"),
        "foreach takes bounds from, to, got 3 values",
        "<input>:2.3-23",
    ),
    case(
        "loop-type-float",
        func("  for %i = 0, 4 : f32 {\n  }"),
        "loop type must be an integer type, got f32",
        "<input>:2.3-22",
    ),
]
