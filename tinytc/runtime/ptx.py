"""tinytc's SPIR-V to PTX, for NVIDIA GPUs (docs/gpu.md): the kernel is always tinytc's module.

SPIR-V -> LLVM IR by the SPIRV-LLVM translator (`llvm-spirv -r`, PyPI's dpcpp-llvm-spirv) ->
the SPIR IR made NVPTX IR (below) -> linked with the builtins of ptx_builtins.py (and CUDA's
libdevice where a kernel calls an accurate math function) -> optimized and compiled by LLVM's
NVPTX back end through llvmlite -> PTX text, which NVIDIA's OpenCL builds as a program binary.

From SPIR to NVPTX IR:
- address spaces: SPIR's private 0 and generic 4 are NVPTX's generic 0, constant 2 is NVPTX's
  constant 4, global 1 and local 3 keep their numbers (NVPTXUsage, "Address Spaces"); a cast
  between two spaces that became one is a bitcast;
- spir_kernel functions become ptx_kernel functions, spir_func calls plain C calls;
- `reqd_work_group_size` becomes `.reqntid` (the launch must match it, as in OpenCL), and the
  SubgroupSize of each kernel picks the builtins of its subgroup size.

Importing this module needs neither llvmlite nor the translator: they are imported on first
use, and a missing one is a PtxError that says which package to install.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ptx_builtins

TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_90"
# PTX ISA 8.0 (CUDA 12.0): every driver of an sm_90 GPU takes it
DEFAULT_PTX_VERSION = "ptx80"
SPACES = {"0": "", "1": " addrspace(1)", "2": " addrspace(4)", "3": " addrspace(3)", "4": ""}
INSTALL_HINT = 'pip install "tinytc[ptx]" (dpcpp-llvm-spirv, llvmlite, nvidia-cuda-nvcc-cu12)'
LIBDEVICE_ENV = "TINYTC_LIBDEVICE"
TRANSLATOR_ENV = "TINYTC_LLVM_SPIRV"


class PtxError(RuntimeError):
    """A module cannot be translated to PTX here (a missing tool, or a builtin the library
    does not define)."""


@dataclass(frozen=True)
class PtxKernel:
    """What the launch needs to know of one kernel."""

    name: str
    params: tuple[str, ...]  # LLVM types of the parameters, in order
    work_group_size: tuple[int, int, int]
    subgroup_size: int


@dataclass(frozen=True)
class PtxModule:
    """The PTX text of a module and its kernels."""

    text: str
    kernels: dict[str, PtxKernel]
    arch: str


def translator() -> str:
    """The path of `llvm-spirv`: $TINYTC_LLVM_SPIRV, else dpcpp-llvm-spirv's."""
    chosen = os.environ.get(TRANSLATOR_ENV)
    if chosen:
        return chosen
    try:
        import dpcpp_llvm_spirv
    except ImportError:
        raise PtxError(f"the SPIRV-LLVM translator is not installed: {INSTALL_HINT}") from None
    path: str = dpcpp_llvm_spirv.get_llvm_spirv_path()
    return path


def _llvm() -> Any:
    try:
        import llvmlite.binding as llvm
    except ImportError:
        raise PtxError(f"llvmlite is not installed: {INSTALL_HINT}") from None
    return llvm


@functools.cache
def _initialized() -> Any:
    llvm = _llvm()
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def spirv_to_llvm(binary: bytes) -> str:
    """The LLVM IR (text, SPIR flavour) of a SPIR-V module, read by the translator."""
    llvm = _initialized()
    with tempfile.TemporaryDirectory(prefix="tinytc-ptx-") as tmp:
        spv, bc = Path(tmp, "module.spv"), Path(tmp, "module.bc")
        spv.write_bytes(binary)
        try:
            done = subprocess.run(
                [translator(), "-r", str(spv), "-o", str(bc)], capture_output=True, text=True
            )
        except OSError as error:
            raise PtxError(f"llvm-spirv cannot be run ({error}): {INSTALL_HINT}") from None
        if done.returncode != 0:
            raise PtxError(f"llvm-spirv could not read the module: {done.stderr.strip()}")
        return str(llvm.parse_bitcode(bc.read_bytes()))


_DEFINE = re.compile(r"^define spir_kernel void @([\w.$]+)\(((?:[^()]|\(\d+\))*)\)(.*)\{$", re.M)
_METADATA = re.compile(r"^!(\d+) = (?:distinct )?!\{(.*)\}$", re.M)
_CAST = re.compile(
    r"addrspacecast (\(?)ptr((?: addrspace\(\d+\))?) ([^ ,()]+) to ptr((?: addrspace\(\d+\))?)"
)
_CALL = re.compile(r"@([\w.$]+)\(")


def kernels_of(text: str) -> dict[str, PtxKernel]:
    """The kernels of a SPIR module with their parameters, work-group and subgroup sizes."""
    metadata = {m[1]: m[2] for m in _METADATA.finditer(text)}

    def numbers(attrs: str, key: str) -> list[int]:
        found = re.search(rf"!{key} !(\d+)", attrs)
        if found is None:
            return []
        return [int(v) for v in re.findall(r"i32 (\d+)", metadata[found[1]])]

    out = {}
    for m in _DEFINE.finditer(text):
        params = tuple(p.rsplit(" ", 1)[0].strip() for p in m[2].split(", ") if p)
        wgs = numbers(m[3], "reqd_work_group_size") or [0, 0, 0]
        sgs = numbers(m[3], "intel_reqd_sub_group_size") or [ptx_builtins.WARP]
        out[m[1]] = PtxKernel(m[1], params, (wgs[0], wgs[1], wgs[2]), sgs[0])
    return out


def nvptx_ir(text: str, kernels: dict[str, PtxKernel], data_layout: str) -> str:
    """The SPIR module's text as NVPTX IR (module docstring), subgroup calls renamed."""
    text = re.sub(r'^target datalayout = ".*"$', f'target datalayout = "{data_layout}"', text,
                  flags=re.M)  # fmt: skip
    text = re.sub(r'^target triple = ".*"$', f'target triple = "{TRIPLE}"', text, flags=re.M)
    text = re.sub(r" addrspace\((\d)\)", lambda m: SPACES.get(m[1], m[0]), text)

    def cast(m: re.Match[str]) -> str:
        op = "bitcast" if m[2] == m[4] else "addrspacecast"
        return f"{op} {m[1]}ptr{m[2]} {m[3]} to ptr{m[4]}"

    text = _CAST.sub(cast, text)
    text = text.replace("define spir_kernel ", "define ptx_kernel ").replace("spir_func ", "")
    text = _rename_subgroup_calls(text, kernels)
    text = _prefetches(text)
    annotations = [
        f'!{{ptr @{k.name}, !"reqntid{axis}", i32 {n}}}'
        for k in kernels.values()
        if k.work_group_size[0]
        for axis, n in zip("xyz", k.work_group_size)
    ]
    if annotations:
        first = 1 + max((int(n) for n in re.findall(r"^!(\d+) = ", text, re.M)), default=0)
        ids = [f"!{first + i}" for i in range(len(annotations))]
        text += f"\n!nvvm.annotations = !{{{', '.join(ids)}}}\n"
        text += "".join(f"{i} = {a}\n" for i, a in zip(ids, annotations))
    return text


_PREFETCH = re.compile(
    r"call void @llvm\.prefetch\.p1\(ptr addrspace\(1\) ([^ ,]+), i32 0, i32 (\d), i32 1\)"
)


def _prefetches(text: str) -> str:
    """LLVM's generic llvm.prefetch, which the NVPTX back end drops, as PTX's prefetch: into L1
    for the highest locality (tinytc's cache level 0), into L2 otherwise (PTX ISA, "prefetch";
    NVPTXUsage's llvm.nvvm.prefetch.global.*)."""
    used = set()

    def call(m: re.Match[str]) -> str:
        level = "L1" if m[2] == "3" else "L2"
        used.add(level)
        return f"call void @llvm.nvvm.prefetch.global.{level}(ptr addrspace(1) {m[1]})"

    text = _PREFETCH.sub(call, text)
    if not used:
        return text
    text = re.sub(r"^declare void @llvm\.prefetch\.p1\(.*\n", "", text, flags=re.M)
    return text + "".join(
        f"declare void @llvm.nvvm.prefetch.global.{level}(ptr addrspace(1))\n"
        for level in sorted(used)
    )


def _rename_subgroup_calls(text: str, kernels: dict[str, PtxKernel]) -> str:
    """Each kernel calls the subgroup builtins of its own size (name.sS); declarations follow."""
    out, renamed = [], set()
    pieces = re.split(r"(?m)^(define ptx_kernel void @[\w.$]+\(.*$)", text)
    size = None
    for piece in pieces:
        header = re.match(r"define ptx_kernel void @([\w.$]+)\(", piece)
        if header:
            size = kernels[header[1]].subgroup_size
        elif size is not None:
            body, _, rest = piece.partition("\n}\n")

            def rename(m: re.Match[str], size: int = size) -> str:
                if not ptx_builtins.depends_on_subgroup_size(m[1]):
                    return m[0]
                renamed.add((m[1], size))
                return f"@{m[1]}.s{size}("

            piece = _CALL.sub(rename, body) + "\n}\n" + rest
            size = None
        out.append(piece)
    text = "".join(out)
    for name, size in sorted(renamed):
        found = re.search(rf"^declare (.*) @{re.escape(name)}\((.*)$", text, re.M)
        if found:
            text += f"declare {found[1]} @{name}.s{size}({found[2]}\n"
    for name in {name for name, _ in renamed}:  # every call now names a size
        text = re.sub(rf"^declare .* @{re.escape(name)}\(.*\n", "", text, flags=re.M)
    return text


def declarations(text: str, defined: set[str]) -> str:
    """`declare` lines for the functions the library text calls but does not define
    (intrinsics, libdevice), from the types at their call sites."""
    out = {}
    for m in re.finditer(r"call (\S+) @([\w.$]+)\(([^)]*)\)", text):
        ret, name, args = m[1], m[2], m[3]
        if name in defined or name in out:
            continue
        types = [a.rsplit(" ", 1)[0] for a in args.split(", ") if a]
        out[name] = f"declare {ret} @{name}({', '.join(types)})\n"
    return "".join(out.values())


def builtins_ir(sizes: set[int], data_layout: str) -> str:
    body = ptx_builtins.library(sizes)
    defined = set(re.findall(r"^define linkonce_odr \S+ @([\w.$]+)\(", body, re.M))
    head = f'target datalayout = "{data_layout}"\ntarget triple = "{TRIPLE}"\n'
    return head + body + declarations(body, defined)


def find_libdevice() -> Path | None:
    """CUDA's libdevice.10.bc: $TINYTC_LIBDEVICE, the CUDA toolkit, or a pip package of
    NVIDIA's that ships it (nvidia-cuda-nvcc-cu12)."""
    candidates = [os.environ.get(LIBDEVICE_ENV, "")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "nvvm", "libdevice", "libdevice.10.bc"))
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidates += sorted(str(p) for p in Path(root).glob("*/nvvm/libdevice/libdevice.10.bc"))
    return next((Path(c) for c in candidates if c and os.path.isfile(c)), None)


def to_ptx(
    binary: bytes, arch: str = DEFAULT_ARCH, ptx_version: str = DEFAULT_PTX_VERSION
) -> PtxModule:
    """The PTX of a SPIR-V module of tinytc's (a PtxError where it cannot be made)."""
    return llvm_to_ptx(spirv_to_llvm(binary), arch, ptx_version)


def llvm_to_ptx(
    spir: str, arch: str = DEFAULT_ARCH, ptx_version: str = DEFAULT_PTX_VERSION
) -> PtxModule:
    """The PTX of the translator's LLVM IR (text) of a module."""
    llvm = _initialized()
    machine = llvm.Target.from_triple(TRIPLE).create_target_machine(
        cpu=arch, features=f"+{ptx_version}", opt=3
    )
    layout = str(machine.target_data)
    kernels = kernels_of(spir)
    module = llvm.parse_assembly(nvptx_ir(spir, kernels, layout))
    sizes = {k.subgroup_size for k in kernels.values()}
    module.link_in(llvm.parse_assembly(builtins_ir(sizes, layout)))
    if any(f.is_declaration and f.name.startswith("__nv_") for f in module.functions):
        module.link_in(_libdevice(layout))
    missing = sorted(
        f.name
        for f in module.functions
        if f.is_declaration and not f.name.startswith(("llvm.", "__nvvm_reflect"))
    )
    if missing:
        raise PtxError(f"no PTX definition for the builtins {', '.join(missing)}")
    for f in module.functions:  # only the kernels stay visible
        if not f.is_declaration and f.name not in kernels:
            f.linkage = llvm.Linkage.internal
    module.verify()
    _optimize(llvm, machine, module)
    return PtxModule(machine.emit_assembly(module), kernels, arch)


def _libdevice(layout: str) -> Any:
    llvm = _llvm()
    path = find_libdevice()
    if path is None:
        raise PtxError(
            "cos, sin, exp, exp2, log and log2 need CUDA's libdevice (libdevice.10.bc): install "
            f"the CUDA toolkit or nvidia-cuda-nvcc-cu12, or set {LIBDEVICE_ENV}"
        )
    library = llvm.parse_bitcode(path.read_bytes())
    library.triple, library.data_layout = TRIPLE, layout
    return library


def _optimize(llvm: Any, machine: Any, module: Any) -> None:
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
