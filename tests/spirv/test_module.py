"""The SPIR-V module builder: valid, deterministic output with inferred capabilities."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tinytc.spirv import (
    Block,
    Builder,
    BuiltIn,
    Capability,
    Decoration,
    ExecutionMode,
    FunctionParameterAttribute,
    Id,
    Instruction,
    MemoryAccess,
    Module,
    Op,
    OpenCLStd,
    SelectionControl,
    SpirvValidationError,
    StorageClass,
    assemble,
    disassemble,
    validate,
)
from tinytc.spirv._grammar import MAGIC_NUMBER, Scope


def add_kernel(version: tuple[int, int] = (1, 2)) -> Module:
    """kernel void add(global float* a, global float* b) { a[gid] = a[gid] + b[gid]; }"""
    module = Module(version)
    f32 = module.type_float(32)
    u64 = module.type_int(64)
    v3u64 = module.type_vector(u64, 3)
    global_f32 = module.type_pointer(StorageClass.CrossWorkgroup, f32)
    kernel = module.kernel("add", [global_f32, global_f32])
    module.execution_mode(kernel, ExecutionMode.LocalSize, 64, 1, 1)
    module.execution_mode(kernel, ExecutionMode.SubgroupSize, 16)
    for parameter in kernel.parameters:
        module.decorate(parameter, Decoration.FuncParamAttr, FunctionParameterAttribute.NoAlias)
    global_id = module.builtin(BuiltIn.GlobalInvocationId, v3u64)
    builder = Builder(module, kernel.append_block())
    gid3 = builder.value(Op.Load, v3u64, global_id, MemoryAccess.Aligned, 32)
    gid = builder.value(Op.CompositeExtract, u64, gid3, 0)
    a = builder.value(Op.InBoundsPtrAccessChain, global_f32, kernel.parameters[0], gid)
    b = builder.value(Op.InBoundsPtrAccessChain, global_f32, kernel.parameters[1], gid)
    x = builder.value(Op.Load, f32, a, MemoryAccess.Aligned, 4)
    y = builder.value(Op.Load, f32, b, MemoryAccess.Aligned, 4)
    builder.emit(Op.Store, a, builder.value(Op.FAdd, f32, x, y), MemoryAccess.Aligned, 4)
    builder.emit(Op.Return)
    return module


def kernel_with_body(module: Module, name: str = "k") -> Builder:
    """A builder positioned in the entry block of a parameterless kernel of ``module``."""
    return Builder(module, module.kernel(name, []).append_block())


def capabilities(binary: bytes) -> set[str]:
    lines = disassemble(binary).splitlines()
    return {line.split()[1] for line in lines if line.strip().startswith("OpCapability")}


def extensions(binary: bytes) -> set[str]:
    lines = disassemble(binary).splitlines()
    return {line.split()[1].strip('"') for line in lines if line.strip().startswith("OpExtension")}


def test_add_kernel_validates() -> None:
    validate(add_kernel().assemble())


def test_add_kernel_disassembly() -> None:
    binary = add_kernel().assemble()
    text = disassemble(binary)
    lines = [line.strip() for line in text.splitlines()]
    assert "; Version: 1.2" in lines
    assert "OpMemoryModel Physical64 OpenCL" in lines
    assert "OpSource OpenCL_C 300000" in lines
    assert 'OpEntryPoint Kernel %add "add" %gl_GlobalInvocationID' in lines
    assert "OpExecutionMode %add LocalSize 64 1 1" in lines
    assert "OpExecutionMode %add SubgroupSize 16" in lines
    assert "OpDecorate %gl_GlobalInvocationID BuiltIn GlobalInvocationId" in lines
    assert "OpReturn" in lines
    assert re.search(r"= OpFAdd %float %\d+ %\d+\n", text), text
    assert capabilities(binary) == {"Addresses", "Kernel", "Int64", "SubgroupDispatch"}
    assert extensions(binary) == set()


def test_header() -> None:
    words = struct.unpack("<5I", add_kernel().assemble()[:20])
    assert words[0] == MAGIC_NUMBER
    assert words[1] == 1 << 16 | 2 << 8
    assert struct.unpack("<5I", add_kernel((1, 4)).assemble()[:20])[1] == 1 << 16 | 4 << 8


def test_deterministic_within_a_process() -> None:
    assert add_kernel().assemble() == add_kernel().assemble()


def test_deterministic_across_hash_seeds() -> None:
    script = (
        "import importlib.util, sys; "
        f"spec = importlib.util.spec_from_file_location('m', {str(Path(__file__))!r}); "
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
        "sys.stdout.write(m.add_kernel().assemble().hex())"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, check=True, text=True, env=env
        )
        outputs.add(result.stdout)
    assert outputs == {add_kernel().assemble().hex()}


def test_words_match_spirv_as() -> None:
    """Our encoder and spirv-as agree word for word (strings, 64-bit literals, halves...)."""
    module = add_kernel()
    module.name(module.type_float(32), "abc")  # 3 characters + nul: one word
    module.name(module.type_int(64), "abcd")  # 4 characters + nul: two words
    for width, value in ((8, -1), (16, 1234), (32, -7), (64, -(2**40) - 3)):
        module.constant_int(width, value)
    for width, value in ((16, 1.5), (32, -0.0), (64, 0.1)):
        module.constant(module.type_float(width), value)
    binary = module.assemble()
    again = assemble(disassemble(binary, raw_ids=True), preserve_ids=True)
    assert again[12:] == binary[12:]  # the generator word differs


def test_broken_module_raises_with_spirv_val_text() -> None:
    module = Module()
    f32, u32 = module.type_float(32), module.type_int(32)
    builder = kernel_with_body(module)
    builder.value(Op.FAdd, f32, module.constant(f32, 1.0), module.constant(u32, 1))
    builder.emit(Op.Return)
    with pytest.raises(SpirvValidationError, match="Expected arithmetic operands") as error:
        validate(module.assemble())
    assert "FAdd" in str(error.value)


def test_types_and_constants_are_uniquified() -> None:
    module = Module()
    f32 = module.type_float(32)
    assert module.type_float(32) is f32
    assert module.type_int(32) is module.type_int(32)
    assert module.type_int(32) is not module.type_int(64)
    pointer = module.type_pointer(StorageClass.CrossWorkgroup, f32)
    assert module.type_pointer(StorageClass.CrossWorkgroup, f32) is pointer
    assert module.type_pointer(StorageClass.Workgroup, f32) is not pointer
    assert module.type_array(f32, 4) is module.type_array(f32, 4)
    assert module.constant(f32, 1.0) is module.constant(f32, 1)
    assert module.constant(f32, 0.0) is not module.constant(f32, -0.0)
    assert module.constant_int(32, -1) is module.constant_int(32, 0xFFFFFFFF)
    assert module.constant_int(64, 5) is not module.constant_int(32, 5)
    bool_type = module.type_bool()
    assert module.constant(bool_type, True) is module.constant(bool_type, True)
    assert module.constant_null(f32) is module.constant_null(f32)
    assert module.builtin(BuiltIn.SubgroupSize, module.type_int(32)) is module.builtin(
        BuiltIn.SubgroupSize, module.type_int(32)
    )


def test_constants_of_every_width() -> None:
    module = Module()
    module.constant_int(8, -1)
    module.constant_int(16, 65535)
    module.constant_int(64, -1)
    module.constant(module.type_float(16), 1.5)
    module.constant(module.type_float(64), 2.0)
    module.constant(module.type_bool(), False)
    module.constant_null(module.type_vector(module.type_float(32), 4))
    kernel_with_body(module).emit(Op.Return)
    binary = module.assemble()
    validate(binary)
    text = disassemble(binary)
    for expected in (
        "OpConstant %uchar 255",
        "OpConstant %ushort 65535",
        "OpConstant %ulong 18446744073709551615",
        "OpConstant %half 0x1.8p+0",
        "OpConstant %double 2",
        "OpConstantFalse %bool",
        "OpConstantNull %v4float",
    ):
        assert expected in text
    assert capabilities(binary) >= {"Int8", "Int16", "Int64", "Float16", "Float64"}


@pytest.mark.parametrize(
    ("width", "value"), [(8, 256), (8, -129), (32, 2**32), (64, 2**64), (64, -(2**63) - 1)]
)
def test_integer_constant_out_of_range(width: int, value: int) -> None:
    with pytest.raises(ValueError, match="does not fit"):
        Module().constant_int(width, value)


def test_float_constant_out_of_range() -> None:
    module = Module()
    with pytest.raises(ValueError, match="does not fit"):
        module.constant(module.type_float(16), 1e6)


def test_width_capabilities_are_inferred() -> None:
    module = Module()
    module.type_vector(module.type_int(8), 16)
    kernel_with_body(module).emit(Op.Return)
    binary = module.assemble()
    validate(binary)
    assert capabilities(binary) == {"Addresses", "Kernel", "Int8", "Vector16"}


def test_float_atomic_capability_follows_the_type() -> None:
    module = Module()
    f32 = module.type_float(32)
    pointer = module.type_pointer(StorageClass.CrossWorkgroup, f32)
    kernel = module.kernel("atomic", [pointer])
    builder = Builder(module, kernel.append_block())
    scope = module.constant_int(32, Scope.Device)
    semantics = module.constant_int(32, 0)
    builder.value(
        Op.AtomicFAddEXT, f32, kernel.parameters[0], scope, semantics, module.constant(f32, 1.0)
    )
    builder.emit(Op.Return)
    binary = module.assemble()
    validate(binary)
    assert "AtomicFloat32AddEXT" in capabilities(binary)
    assert "AtomicFloat16AddEXT" not in capabilities(binary)
    assert extensions(binary) == {"SPV_EXT_shader_atomic_float_add"}


def test_ambiguous_capability_must_be_required() -> None:
    module = Module()
    u32 = module.type_int(32)
    builder = kernel_with_body(module)
    builder.value(Op.BitReverse, u32, module.constant_int(32, 1))
    builder.emit(Op.Return)
    with pytest.raises(ValueError, match=r"Capability\.BitInstructions"):
        module.assemble()
    module.require_capability(Capability.BitInstructions)
    binary = module.assemble()
    validate(binary)
    assert "BitInstructions" in capabilities(binary)
    assert "Shader" not in capabilities(binary)
    assert extensions(binary) == {"SPV_KHR_bit_instructions"}


def test_feature_of_a_later_version_is_refused() -> None:
    module = Module((1, 0))
    kernel = module.kernel("k", [])
    module.execution_mode(kernel, ExecutionMode.SubgroupSize, 16)
    Builder(module, kernel.append_block()).emit(Op.Return)
    with pytest.raises(ValueError, match=r"needs SPIR-V 1\.1"):
        module.assemble()


def test_version_1_4_interface_lists_every_global() -> None:
    module = add_kernel((1, 4))
    f32 = module.type_float(32)
    scratch = module.variable(
        module.type_pointer(StorageClass.Workgroup, module.type_array(f32, 64))
    )
    module.name(scratch, "scratch")
    binary = module.assemble()
    validate(binary, target_env="spv1.4")
    assert 'OpEntryPoint Kernel %add "add" %gl_GlobalInvocationID %scratch' in disassemble(binary)
    assert "%scratch" not in disassemble(add_kernel().assemble())


def test_ext_inst_uses_opencl_std() -> None:
    module = Module()
    f32 = module.type_float(32)
    builder = kernel_with_body(module)
    one = module.constant(f32, 1.0)
    builder.ext_inst(f32, OpenCLStd.fma, one, one, one)
    builder.emit(Op.Return)
    binary = module.assemble()
    validate(binary)
    text = disassemble(binary)
    assert 'OpExtInstImport "OpenCL.std"' in text
    assert "fma %float_1 %float_1 %float_1" in text


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda m: Instruction(Op.TypeInt, None, Id(), ("32", 0)), "OpTypeInt: operand 0"),
        (lambda m: Instruction(Op.TypeInt, None, Id(), (32,)), "missing operand"),
        (lambda m: Instruction(Op.TypeInt, None, Id(), (32, 0, 1)), "too many operands"),
        (lambda m: Instruction(Op.TypeInt, None, None, (32, 0)), "needs an IdResult"),
        (lambda m: Instruction(Op.Store, Id(), None, (Id(), Id())), "takes no IdResultType"),
        (lambda m: Instruction(Op.TypeInt, None, Id(), (2**32, 0)), "LiteralInteger"),
        (
            lambda m: m.decorate(Id(), StorageClass.Input),  # not a Decoration
            "must be Decoration",
        ),
        (lambda m: m.decorate(Id(), Decoration.Alignment), "missing operand"),
        (lambda m: Builder(m).emit(Op.Load, Id(), Id()), "use Builder.value"),
        (
            lambda m: kernel_with_body(m).ext_inst(m.type_float(32), OpenCLStd.fma, Id(), Id()),
            "OpenCL.std fma: missing operand",
        ),
    ],
)
def test_grammar_rejects_bad_operands(make: Callable[[Module], object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        make(Module())


def test_undefined_id_is_refused() -> None:
    module = Module()
    builder = kernel_with_body(module)
    builder.emit(Op.Store, Id("nowhere"), Id("nothing"))
    builder.emit(Op.Return)
    with pytest.raises(ValueError, match="never defined"):
        module.assemble()


def test_blocks_need_terminators() -> None:
    module = Module()
    builder = kernel_with_body(module)
    with pytest.raises(ValueError, match="no terminator"):
        module.assemble()
    builder.emit(Op.Return)
    with pytest.raises(ValueError, match="already ends"):
        builder.emit(Op.Return)


def test_branches_phi_local_variable_and_helper_function() -> None:
    module = Module()
    u32, bool_type = module.type_int(32), module.type_bool()
    helper = module.function(u32, [u32])
    helper_builder = Builder(module, helper.append_block())
    doubled = helper_builder.value(Op.IAdd, u32, helper.parameters[0], helper.parameters[0])
    helper_builder.emit(Op.ReturnValue, doubled)

    kernel = module.kernel("branchy", [u32])
    local = kernel.variable(module.type_pointer(StorageClass.Function, u32))
    entry, then, merge = kernel.append_block(), Block(), Block()
    builder = Builder(module, entry)
    condition = builder.value(
        Op.ULessThan, bool_type, kernel.parameters[0], module.constant_int(32, 8)
    )
    builder.emit(Op.SelectionMerge, merge.label, SelectionControl.None_)
    builder.emit(Op.BranchConditional, condition, then.label, merge.label)
    builder.position_at_end(kernel.append_block(then))
    called = builder.value(Op.FunctionCall, u32, helper.result, kernel.parameters[0])
    builder.emit(Op.Branch, merge.label)
    builder.position_at_end(kernel.append_block(merge))
    zero = module.constant_int(32, 0)
    joined = builder.value(Op.Phi, u32, called, then.label, zero, entry.label)
    builder.emit(Op.Store, local, joined)
    builder.emit(Op.Return)

    binary = module.assemble()
    validate(binary)
    text = disassemble(binary)
    assert "OpSelectionMerge" in text and "OpPhi %uint" in text
    assert "OpVariable %_ptr_Function_uint Function" in text
    with pytest.raises(ValueError, match="already in the function"):
        kernel.append_block(merge)


def test_constant_of_the_wrong_kind() -> None:
    module = Module()
    with pytest.raises(TypeError, match="needs an int"):
        module.constant(module.type_int(32), 1.5)
    with pytest.raises(TypeError, match="OpTypePointer"):
        module.constant(module.type_pointer(StorageClass.CrossWorkgroup, module.type_int(8)), 0)
    with pytest.raises(ValueError, match=r"Function\.variable"):
        module.variable(module.type_pointer(StorageClass.Function, module.type_int(8)))


def test_extension_follows_from_capability() -> None:
    module = Module()
    f32 = module.type_float(32)
    builder = kernel_with_body(module)
    one = module.constant(f32, 1.0)
    builder.value(Op.SubgroupShuffleINTEL, f32, one, module.constant_int(32, 0))
    builder.value(Op.ConvertFToBF16INTEL, module.type_int(16), one)
    builder.emit(Op.Return)
    binary = module.assemble()
    validate(binary)
    assert {"SubgroupShuffleINTEL", "BFloat16ConversionINTEL", "Int16"} <= capabilities(binary)
    assert extensions(binary) == {"SPV_INTEL_subgroups", "SPV_INTEL_bfloat16_conversion"}
