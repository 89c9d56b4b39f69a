"""The OpenCL builtins that tinytc's SPIR-V calls once the SPIRV-LLVM translator has read it,
written here in LLVM IR for NVPTX (tinytc/runtime/ptx.py links them; docs/gpu.md).

The translator turns SPIR-V's builtin variables, group operations, atomics and OpenCL.std
instructions into calls of OpenCL C functions by their mangled names (`_Z12get_local_idj`,
`_Z20sub_group_reduce_addf`, ...). Each is defined here on NVVM intrinsics, with linkonce_odr
linkage and alwaysinline, so that only the used ones survive, inlined.

Two conventions hold between this library and the launch (tinytc/runtime/ptx_opencl.py):

- The batch is OpenCL dimension 2, but CUDA's grid z holds at most 65535 blocks, so the
  launch puts the work-groups on grid x (up to 2^31 - 1): `get_group_id(2)` reads ctaid.x and
  `get_group_id(0)` ctaid.z (both 0 and 1 are single groups in tinytc's launches).
- A subgroup of S lanes (S = 4..32, the kernel's SubgroupSize) is a segment of S consecutive
  lanes of a warp: the functions that depend on S are made once per size, with the suffix
  `.sS`, and ptx.py renames each kernel's calls to its size.
"""

from __future__ import annotations

from collections.abc import Iterable

WARP = 32
# OpenCL C's mangled scalar types: code -> (LLVM type, bits, kind); kind i signed, u unsigned,
# f floating.
TYPES = {
    "c": ("i8", 8, "i"), "a": ("i8", 8, "i"), "h": ("i8", 8, "u"),
    "s": ("i16", 16, "i"), "t": ("i16", 16, "u"),
    "i": ("i32", 32, "i"), "j": ("i32", 32, "u"),
    "l": ("i64", 64, "i"), "m": ("i64", 64, "u"),
    "Dh": ("half", 16, "f"), "f": ("float", 32, "f"), "d": ("double", 64, "f"),
}  # fmt: skip
FLOATS = ("Dh", "f", "d")
INTEGERS = ("c", "a", "h", "s", "t", "i", "j", "l", "m")
# Accurate math: CUDA's libdevice (ptx.py links it where a kernel uses one); the name of the
# f32 form ends in f.
LIBDEVICE_MATH = ("cos", "sin", "exp", "exp2", "log", "log2")
LIBDEVICE_MATH2 = ("hypot",)  # of two arguments: hypot is the abs of a complex number
ATTRS = "alwaysinline nounwind"
CONVERGENT = "alwaysinline nounwind convergent"


def mangled(name: str, *codes: str) -> str:
    """The Itanium mangling OpenCL C uses for a free function of scalar arguments."""
    return f"_Z{len(name)}{name}{''.join(codes) or 'v'}"


def _define(ret: str, name: str, params: str, body: list[str], attrs: str = ATTRS) -> str:
    lines = "\n".join(f"  {line}" for line in body)
    return f"define linkonce_odr {ret} @{name}({params}) {attrs} {{\n{lines}\n}}\n"


def _sreg(name: str) -> str:
    return f"call i32 @llvm.nvvm.read.ptx.sreg.{name}()"


# OpenCL dimension -> the special registers that answer it: (x, y, z, default beyond 2).
WORK_ITEM = {
    "get_local_id": ("tid.x", "tid.y", "tid.z", "0"),
    "get_local_size": ("ntid.x", "ntid.y", "ntid.z", "1"),
    "get_enqueued_local_size": ("ntid.x", "ntid.y", "ntid.z", "1"),
    "get_group_id": ("ctaid.z", "ctaid.y", "ctaid.x", "0"),  # the batch on grid x
    "get_num_groups": ("nctaid.z", "nctaid.y", "nctaid.x", "1"),
}


def _by_dimension(regs: tuple[str, str, str, str]) -> list[str]:
    """Body lines leaving the i32 answer for dimension %d in %r."""
    x, y, z, default = regs
    return [
        f"%x = {_sreg(x)}", f"%y = {_sreg(y)}", f"%z = {_sreg(z)}",
        "%is0 = icmp eq i32 %d, 0", "%is1 = icmp eq i32 %d, 1", "%is2 = icmp eq i32 %d, 2",
        f"%r2 = select i1 %is2, i32 %z, i32 {default}",
        "%r1 = select i1 %is1, i32 %y, i32 %r2",
        "%r = select i1 %is0, i32 %x, i32 %r1",
    ]  # fmt: skip


def work_items() -> str:
    """get_local_id and friends, get_global_id, barriers and fences (independent of S)."""
    out = []
    for name, regs in WORK_ITEM.items():
        body = [*_by_dimension(regs), "%w = zext i32 %r to i64", "ret i64 %w"]
        out.append(_define("i64", mangled(name, "j"), "i32 %d", body))
    group, size, local = (
        mangled(n, "j") for n in ("get_group_id", "get_local_size", "get_local_id")
    )
    body = [
        f"%g = call i64 @{group}(i32 %d)", f"%s = call i64 @{size}(i32 %d)",
        f"%l = call i64 @{local}(i32 %d)", "%gs = mul i64 %g, %s", "%r = add i64 %gs, %l",
        "ret i64 %r",
    ]  # fmt: skip
    out.append(_define("i64", mangled("get_global_id", "j"), "i32 %d", body))
    groups = mangled("get_num_groups", "j")
    body = [f"%g = call i64 @{groups}(i32 %d)", f"%s = call i64 @{size}(i32 %d)"]
    out.append(_define("i64", mangled("get_global_size", "j"), "i32 %d",
                       [*body, "%r = mul i64 %g, %s", "ret i64 %r"]))  # fmt: skip
    out.append(_define("i64", mangled("get_global_offset", "j"), "i32 %d", ["ret i64 0"]))
    out.append(_define("i32", mangled("get_work_dim"), "", ["ret i32 3"]))
    out.append(_define("i32", "tinytc.linear", "", [
        f"%x = {_sreg('tid.x')}", f"%y = {_sreg('tid.y')}", f"%z = {_sreg('tid.z')}",
        f"%nx = {_sreg('ntid.x')}", f"%ny = {_sreg('ntid.y')}",
        "%zy = mul i32 %z, %ny", "%yz = add i32 %y, %zy", "%yx = mul i32 %yz, %nx",
        "%r = add i32 %x, %yx", "ret i32 %r",
    ]))  # fmt: skip
    out.append(_define("i32", "tinytc.items", "", [
        f"%nx = {_sreg('ntid.x')}", f"%ny = {_sreg('ntid.y')}", f"%nz = {_sreg('ntid.z')}",
        "%a = mul i32 %nx, %ny", "%r = mul i32 %a, %nz", "ret i32 %r",
    ]))  # fmt: skip
    linear = ["%r = call i32 @tinytc.linear()", "%w = zext i32 %r to i64", "ret i64 %w"]
    out.append(_define("i64", mangled("get_local_linear_id"), "", linear))
    # barrier.sync (not the .aligned bar.sync): also correct where the compiler cannot prove
    # the warp converged; it orders the memory accesses of the threads it joins (PTX ISA,
    # "barrier"), local and global alike, as OpenCL's work-group barrier does.
    sync = ["call void @llvm.nvvm.barrier.sync(i32 0)", "ret void"]
    for name in ("barrier", "work_group_barrier"):
        out.append(_define("void", mangled(name, "j"), "i32 %flags", sync, CONVERGENT))
    fence = ["call void @llvm.nvvm.membar.cta()", "ret void"]
    out.append(_define("void", mangled("mem_fence", "j"), "i32 %flags", fence))
    return "".join(out)


def subgroups(size: int) -> str:
    """The functions of subgroups of ``size`` lanes, named with the suffix .s{size}."""
    if size not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"subgroups of {size} lanes do not fit a warp of {WARP}")
    s = f".s{size}"
    clamp = ((WARP - size) << 8) | (WARP - 1)  # shfl's segment mask and clamp (PTX ISA, shfl)
    out = [
        _define("i32", f"{mangled('get_sub_group_local_id')}{s}", "", [
            "%l = call i32 @tinytc.linear()", f"%r = and i32 %l, {size - 1}", "ret i32 %r"]),
        _define("i32", f"{mangled('get_sub_group_id')}{s}", "", [
            "%l = call i32 @tinytc.linear()", f"%r = udiv i32 %l, {size}", "ret i32 %r"]),
        _define("i32", f"{mangled('get_num_sub_groups')}{s}", "", [
            "%n = call i32 @tinytc.items()", f"%a = add i32 %n, {size - 1}",
            f"%r = udiv i32 %a, {size}", "ret i32 %r"]),
    ]  # fmt: skip
    for name in ("get_sub_group_size", "get_max_sub_group_size"):
        out.append(_define("i32", f"{mangled(name)}{s}", "", [f"ret i32 {size}"]))
    full = (1 << size) - 1
    mask = (
        ["%r = add i32 0, -1"]
        if size == WARP
        else [
            f"%lane = {_sreg('laneid')}",
            f"%base = and i32 %lane, {WARP - size}",
            f"%r = shl i32 {full}, %base",
        ]
    )
    out.append(_define("i32", f"tinytc.mask{s}", "", [*mask, "ret i32 %r"]))
    bar = [f"%m = call i32 @tinytc.mask{s}()", "call void @llvm.nvvm.bar.warp.sync(i32 %m)"]
    out.append(_define("void", f"{mangled('sub_group_barrier', 'j')}{s}", "i32 %flags",
                       [*bar, "ret void"], CONVERGENT))  # fmt: skip
    for code in TYPES:
        out.append(_shuffle(code, "sub_group_shuffle_xor", "bfly", s, clamp))
        out.append(_shuffle(code, "sub_group_shuffle", "idx", s, clamp))
        out.append(_shuffle(code, "sub_group_broadcast", "idx", s, clamp))
    up = (WARP - size) << 8  # shfl.up's segment mask, clamp 0 (PTX ISA, shfl)
    for code in (*INTEGERS, *FLOATS):
        out.append(_shuffle(code, "sub_group_shuffle_up", "up", s, up))
        out.append(_shuffle(code, "sub_group_shuffle_down", "down", s, clamp))
        for op in ("add", "min", "max"):
            out.append(_reduce(code, op, size, s))
            out.append(_scan(code, op, size, s))
    return "".join(out)


def _words(code: str, value: str) -> tuple[list[str], list[str]]:
    """Lines splitting ``value`` of type code into i32 words %w0 (, %w1)."""
    ty, bits, kind = TYPES[code]
    if bits == 64:
        bits_of = (
            [f"%b = bitcast {ty} {value} to i64"] if kind == "f" else [f"%b = add i64 {value}, 0"]
        )
        return [*bits_of, "%w0 = trunc i64 %b to i32", "%hi = lshr i64 %b, 32",
                "%w1 = trunc i64 %hi to i32"], ["%w0", "%w1"]  # fmt: skip
    if bits == 32:
        return ([f"%w0 = bitcast {ty} {value} to i32"], ["%w0"])
    narrow = f"i{bits}"
    lines = (
        [f"%n = bitcast {ty} {value} to {narrow}"] if kind == "f" else [f"%n = add {ty} {value}, 0"]
    )
    return [*lines, f"%w0 = zext {narrow} %n to i32"], ["%w0"]


def _unwords(code: str, words: list[str]) -> list[str]:
    """Lines joining i32 words back into %out of type code."""
    ty, bits, _ = TYPES[code]
    if bits == 64:
        join = [f"%lo = zext i32 {words[0]} to i64", f"%up = zext i32 {words[1]} to i64",
                "%sh = shl i64 %up, 32", "%j = or i64 %lo, %sh"]  # fmt: skip
        return [*join, f"%out = bitcast i64 %j to {ty}"]
    if bits == 32:
        return [f"%out = bitcast i32 {words[0]} to {ty}"]
    return [f"%t = trunc i32 {words[0]} to i{bits}", f"%out = bitcast i{bits} %t to {ty}"]


def _shuffle(code: str, name: str, mode: str, suffix: str, clamp: int) -> str:
    ty = TYPES[code][0]
    split, words = _words(code, "%v")
    body = [*split, f"%m = call i32 @tinytc.mask{suffix}()"]
    moved = []
    for i, w in enumerate(words):
        body.append(f"%s{i} = call i32 @llvm.nvvm.shfl.sync.{mode}.i32"
                    f"(i32 %m, i32 {w}, i32 %lane, i32 {clamp})")  # fmt: skip
        moved.append(f"%s{i}")
    body += [*_unwords(code, moved), f"ret {ty} %out"]
    return _define(ty, f"{mangled(name, code, 'j')}{suffix}", f"{ty} %v, i32 %lane", body,
                   CONVERGENT)  # fmt: skip


def _combine(code: str, op: str, a: str, b: str, out: str) -> list[str]:
    ty, _, kind = TYPES[code]
    if op == "add":
        return [f"{out} = {'fadd' if kind == 'f' else 'add'} {ty} {a}, {b}"]
    if kind == "f":
        intrinsic = "minnum" if op == "min" else "maxnum"
        return [f"{out} = call {ty} @llvm.{intrinsic}.{_suffix(ty)}({ty} {a}, {ty} {b})"]
    cmp = {"min": "lt", "max": "gt"}[op]
    return [f"{out}.c = icmp {'s' if kind == 'i' else 'u'}{cmp} {ty} {a}, {b}",
            f"{out} = select i1 {out}.c, {ty} {a}, {ty} {b}"]  # fmt: skip


def _suffix(ty: str) -> str:
    return {"half": "f16", "float": "f32", "double": "f64"}[ty]


def _reduce(code: str, op: str, size: int, suffix: str) -> str:
    """A butterfly over the segment: every lane ends with the whole reduction."""
    ty = TYPES[code][0]
    shuffle = f"{mangled('sub_group_shuffle_xor', code, 'j')}{suffix}"
    body, acc, step = [], "%v", size // 2
    while step:
        body.append(f"%x{step} = call {ty} @{shuffle}({ty} {acc}, i32 {step})")
        body += _combine(code, op, acc, f"%x{step}", f"%a{step}")
        acc, step = f"%a{step}", step // 2
    body.append(f"ret {ty} {acc}")
    return _define(ty, f"{mangled(f'sub_group_reduce_{op}', code)}{suffix}", f"{ty} %v", body,
                   CONVERGENT)  # fmt: skip


def _identity(code: str, op: str) -> str:
    """The value that ``op`` leaves the other operand unchanged with, as an LLVM constant."""
    _, bits, kind = TYPES[code]
    if op == "add":
        return "0.0" if kind == "f" else "0"
    if kind == "f":
        infinity = {16: "0xH7C00", 32: "0x7FF0000000000000", 64: "0x7FF0000000000000"}[bits]
        return infinity if op == "min" else {16: "0xHFC00"}.get(bits, "0xFFF0000000000000")
    if kind == "u":
        return "-1" if op == "min" else "0"
    high = 2 ** (bits - 1)
    return str(high - 1) if op == "min" else str(-high)


def _scan(code: str, op: str, size: int, suffix: str) -> str:
    """Inclusive (Hillis and Steele: log2(S) shuffles up) and exclusive scans."""
    ty = TYPES[code][0]
    up = f"{mangled('sub_group_shuffle_up', code, 'j')}{suffix}"
    body = [f"%lane = call i32 @{mangled('get_sub_group_local_id')}{suffix}()"]
    acc, step = "%v", 1
    while step < size:
        body += [f"%y{step} = call {ty} @{up}({ty} {acc}, i32 {step})",
                 *_combine(code, op, f"%y{step}", acc, f"%t{step}"),
                 f"%in{step} = icmp uge i32 %lane, {step}",
                 f"%a{step} = select i1 %in{step}, {ty} %t{step}, {ty} {acc}"]  # fmt: skip
        acc, step = f"%a{step}", step * 2
    inclusive = f"{mangled(f'sub_group_scan_inclusive_{op}', code)}{suffix}"
    out = _define(ty, inclusive, f"{ty} %v", [*body, f"ret {ty} {acc}"], CONVERGENT)
    exclusive = [
        f"%i = call {ty} @{inclusive}({ty} %v)",
        f"%e = call {ty} @{up}({ty} %i, i32 1)",
        f"%lane = call i32 @{mangled('get_sub_group_local_id')}{suffix}()",
        "%first = icmp eq i32 %lane, 0",
        f"%r = select i1 %first, {ty} {_identity(code, op)}, {ty} %e",
        f"ret {ty} %r",
    ]
    name = f"{mangled(f'sub_group_scan_exclusive_{op}', code)}{suffix}"
    return out + _define(ty, name, f"{ty} %v", exclusive, CONVERGENT)


# OpenCL 1.2's atomics, which the translator calls whatever the SPIR-V's memory semantics (it
# drops them): name -> atomicrmw operation (None: cmpxchg; inc and dec add or subtract 1).
ATOMICS = {
    "add": "add", "sub": "sub", "xchg": "xchg", "min": "min", "max": "max", "and": "and",
    "or": "or", "xor": "xor", "inc": "add", "dec": "sub", "cmpxchg": None,
}  # fmt: skip
SPACES = (("1", "ptr addrspace(1)"), ("3", "ptr addrspace(3)"), ("4", "ptr"))


def atomics() -> str:
    """atomic_* (32-bit) and atom_* (64-bit) of OpenCL 1.2 on global, local and generic
    pointers, returning the old value. The translator drops the SPIR-V's scope and semantics
    (and LLVM's NVPTX back end emits atomicrmw relaxed whatever its ordering), so each is
    fenced on both sides at device scope: sequentially consistent, as strong as any order a
    kernel may ask for within the GPU (docs/gpu.md, "Atomics")."""
    out = []
    fence = 'fence syncscope("device") seq_cst'
    for space, ptr in SPACES:
        for prefix in ("atomic", "atom"):
            for code in ("i", "j", "l", "m", "f", "d"):
                ty, _, kind = TYPES[code]
                for short, op in ATOMICS.items():
                    if kind == "f" and short not in ("add", "xchg"):
                        continue
                    name = f"{prefix}_{short}"
                    args = [f"{ptr} %p"] + [f"{ty} %v"] * (short not in ("inc", "dec"))
                    if op is None:
                        args.append(f"{ty} %n")
                        pair = f"%pair = cmpxchg {ptr} %p, {ty} %v, {ty} %n monotonic monotonic"
                        update = [pair, f"%o = extractvalue {{ {ty}, i1 }} %pair, 0"]
                    else:
                        rmw = {"add": "fadd", "sub": "fsub"}.get(op, op) if kind == "f" else op
                        rmw = f"u{rmw}" if kind == "u" and op in ("min", "max") else rmw
                        value = "%v" if len(args) > 1 else ("1.0" if kind == "f" else "1")
                        update = [f"%o = atomicrmw {rmw} {ptr} %p, {ty} {value} monotonic"]
                    mangling = f"PU3AS{space}V{code}" + code * (len(args) - 1)
                    full = f"_Z{len(name)}{name}{mangling}"
                    body = [fence, *update, fence, f"ret {ty} %o"]
                    out.append(_define(ty, full, ", ".join(args), body))
    return "".join(out)


def math() -> str:
    """fma, min, max, abs, clamp, isnan, and the math functions (libdevice, NVVM approx)."""
    out = []
    for code in FLOATS:
        ty = TYPES[code][0]
        sfx = _suffix(ty)
        three = f"{ty} %a, {ty} %b, {ty} %c"
        out.append(_define(ty, mangled("fma", code, code, code), three, [
            f"%r = call {ty} @llvm.fma.{sfx}({three})", f"ret {ty} %r"]))  # fmt: skip
        for name, intrinsic in (("fmin", "minnum"), ("fmax", "maxnum")):
            out.append(
                _define(
                    ty,
                    mangled(name, code, code),
                    f"{ty} %a, {ty} %b",
                    [f"%r = call {ty} @llvm.{intrinsic}.{sfx}({ty} %a, {ty} %b)", f"ret {ty} %r"],
                )
            )
        out.append(
            _define(
                ty,
                mangled("fabs", code),
                f"{ty} %a",
                [f"%r = call {ty} @llvm.fabs.{sfx}({ty} %a)", f"ret {ty} %r"],
            )
        )
        out.append(
            _define(
                "i32",
                mangled("isnan", code),
                f"{ty} %a",
                [f"%c = fcmp uno {ty} %a, %a", "%r = zext i1 %c to i32", "ret i32 %r"],
            )
        )
    for code in INTEGERS:
        ty, _, kind = TYPES[code]
        for op in ("min", "max"):
            body = _combine(code, op, "%a", "%b", "%r")
            out.append(_define(ty, mangled(op, code, code), f"{ty} %a, {ty} %b",
                               [*body, f"ret {ty} %r"]))  # fmt: skip
        low, high = (
            _combine(code, "max", "%x", "%lo", "%m"),
            _combine(code, "min", "%m", "%hi", "%r"),
        )
        out.append(_define(ty, mangled("clamp", code, code, code), f"{ty} %x, {ty} %lo, {ty} %hi",
                           [*low, *high, f"ret {ty} %r"]))  # fmt: skip
        absolute = (
            [f"%r = call {ty} @llvm.abs.{ty}({ty} %a, i1 false)"] if kind == "i"
            else [f"%r = add {ty} %a, 0"]
        )  # fmt: skip
        out.append(_define(ty, mangled("abs", code), f"{ty} %a", [*absolute, f"ret {ty} %r"]))
    for name in LIBDEVICE_MATH:
        for code, ty, nv in (("f", "float", f"__nv_{name}f"), ("d", "double", f"__nv_{name}")):
            out.append(_define(ty, mangled(name, code), f"{ty} %a", [
                f"%r = call {ty} @{nv}({ty} %a)", f"ret {ty} %r"]))  # fmt: skip
    for name in LIBDEVICE_MATH2:
        for code, ty, nv in (("f", "float", f"__nv_{name}f"), ("d", "double", f"__nv_{name}")):
            out.append(_define(ty, mangled(name, code, code), f"{ty} %a, {ty} %b", [
                f"%r = call {ty} @{nv}({ty} %a, {ty} %b)", f"ret {ty} %r"]))  # fmt: skip
    # native_ (OpenCL: implementation-defined accuracy): PTX's approximate instructions for
    # exp and log (through base 2); sin and cos take libdevice's, since sin.approx and
    # cos.approx bound their error only in [-pi, pi] (PTX ISA) and gave 19811 ulps at |x| < 100
    # on the H100 (tests/test_math.py allows 8192)
    log2e, ln2 = "0x3FF7154760000000", "0x3FE62E4300000000"  # float constants as doubles
    natives = {
        "native_cos": ["%r = call float @__nv_cosf(float %a)"],
        "native_sin": ["%r = call float @__nv_sinf(float %a)"],
        "native_exp2": ["%r = call float @llvm.nvvm.ex2.approx.f(float %a)"],
        "native_log2": ["%r = call float @llvm.nvvm.lg2.approx.f(float %a)"],
        "native_exp": [f"%s = fmul float %a, {log2e}",
                       "%r = call float @llvm.nvvm.ex2.approx.f(float %s)"],
        "native_log": ["%l = call float @llvm.nvvm.lg2.approx.f(float %a)",
                       f"%r = fmul float %l, {ln2}"],
    }  # fmt: skip
    for name, body in natives.items():
        out.append(_define("float", mangled(name, "f"), "float %a", [*body, "ret float %r"]))
    return "".join(out)


def relational() -> str:
    """all and any of a signed integer vector: whether the sign bit of every (some) component
    is set (the translator reads OpAll and OpAny of a bool vector, as complex cmp.eq and
    cmp.ne give, as these of a char vector)."""
    out = []
    for code in ("c", "s", "i", "l"):
        ty = TYPES[code][0]
        for n in (2, 3, 4, 8, 16):
            vec = f"<{n} x {ty}>"
            for name, reduce in (("all", "and"), ("any", "or")):
                out.append(_define("i32", mangled(name, f"Dv{n}_{code}"), f"{vec} %a", [
                    f"%neg = icmp slt {vec} %a, zeroinitializer",
                    f"%r = call i1 @llvm.vector.reduce.{reduce}.v{n}i1(<{n} x i1> %neg)",
                    "%z = zext i1 %r to i32", "ret i32 %z"]))  # fmt: skip
    return "".join(out)


def conversions() -> str:
    """convert_<float type>N of another float type's vector (the translator's form of
    OpFConvert of a vector, as a cast between c32 and c64 gives): round to nearest even."""
    names = {"Dh": "half", "f": "float", "d": "double"}
    out = []
    for n in (2, 3, 4, 8, 16):
        for src, dst in ((s, d) for s in FLOATS for d in FLOATS if s != d):
            a, b = TYPES[src], TYPES[dst]
            how = "fpext" if b[1] > a[1] else "fptrunc"
            name = f"convert_{names[dst]}{n}"
            frm, to = f"<{n} x {a[0]}>", f"<{n} x {b[0]}>"
            body = [f"%r = {how} {frm} %a to {to}", f"ret {to} %r"]
            out.append(_define(to, mangled(name, f"Dv{n}_{src}"), f"{frm} %a", body))
    return "".join(out)


def library(subgroup_sizes: Iterable[int]) -> str:
    """The whole library (without target lines) for kernels of these subgroup sizes."""
    parts = [work_items(), atomics(), math(), relational(), conversions()]
    parts += [subgroups(size) for size in sorted(set(subgroup_sizes))]
    return "".join(parts)


def depends_on_subgroup_size(name: str) -> bool:
    """Whether a builtin is made per subgroup size (its calls get the kernel's suffix)."""
    stem = name.lstrip("_Z0123456789")
    return stem.startswith(("get_sub_group", "get_max_sub_group", "get_num_sub_groups",
                            "sub_group_"))  # fmt: skip
