"""The top layer of the generator: a kernel's parameters, the arguments they take, its
attributes and its body."""

from __future__ import annotations

from typing import Any

from ...ir import (
    INDEX,
    Builder,
    Constant,
    GroupIdInst,
    GroupType,
    LoadInst,
    MemrefType,
    ScalarType,
    SubviewInst,
    Value,
)
from ..case import KernelCase, ParamSpec
from ..intervals import value_range
from .features import ELEMENT_TYPES, SCALAR_PARAMETER_TYPES, SHARED_TYPES
from .model import Ctx, GroupValue, Root, Scalar, View
from .regions import STYLES, RegionStatements
from .scalars import FLOAT_CONSTANTS


class KernelGenerator(RegionStatements):
    """Draws one kernel into a Builder, keeping track of what makes it well defined."""

    def build(self, b: Builder) -> KernelCase:
        """Draw the kernel into b; returns it with how to make its inputs."""
        self.b = b
        self.style = self.pick([s for s in STYLES if s != "coopmatrix" or self.allows(s)])
        self.howmany = self.int(1, self.limits.max_howmany)
        if self.style == "linalg" and self.flag(25):  # more than one batch of work-groups
            self.howmany = self.int(self.limits.max_howmany, 24 * self.limits.max_howmany)
        specs = self.parameters()
        wgs, sgs = self.coop_attributes(*self.attributes())
        seed = self.int(0, 2**32 - 1)
        params = [(p.name, p.type) for p in specs]
        with b.function(self.name, params, wgs, sgs) as values, self.scope():
            self.setup(specs, values)
            self.region(Ctx(), minimum=1)
            if self.style == "scalar" and self.allows("foreach") and self.allows("store"):
                self.flush()
            self.make_observable()
        return KernelCase(self.name, self.howmany, specs, seed, self.work)

    def make_observable(self) -> None:
        """Add collectives or stores (4 tries) until the kernel writes to a parameter: a
        difference one cannot see finds no bug."""
        for _ in range(4):
            if self.observable:
                break
            sink = self.weighted(
                [
                    (2, self.collective),
                    (2 if self.allows("foreach") else 0, self.foreach_statement),
                    (1 if self.allows("mixed_store") else 0, self.mixed_store),
                    (3 if self.launch else 0, self.parallel_statement),
                ]
            )
            sink(Ctx())

    def attributes(self) -> tuple[tuple[int, int] | None, int | None]:
        """work_group_size and subgroup_size attributes, or None where the kernel leaves them to the
        compiler."""
        if not self.allows("attributes") or not self.flag(35):
            return None, None
        mode = self.int(0, 2)
        if mode == 1:  # work-group size only: the pass picks a subgroup size that divides it
            return (self.pick([16, 32, 8, 64, 24, 48, 12]), self.int(1, 2)), None
        sgs = self.pick([16, 32, 8, 4, 64])
        if mode == 0:
            return None, sgs
        return (sgs * self.int(1, 2), self.int(1, 2)), sgs

    def parameters(self) -> list[ParamSpec]:
        """The parameters (at least one 'out' memref); sets the kernel's element type."""
        count = self.int(1, self.limits.max_params)
        self.element = self.pick(self.types(ELEMENT_TYPES))
        specs: list[ParamSpec] = []
        for i in range(count):
            role = self.weighted(
                [
                    (3, "out"), (3, "in"), (2, "scalar"),
                    (1 if self.allows("group") else 0, "group_in"),
                    (1 if self.allows("group") else 0, "group_out"),
                    (1 if self.allows("atomic") else 0, "shared"),
                ]
            )  # fmt: skip
            prefix = {"scalar": "x", "group_in": "g", "group_out": "h", "shared": "s"}
            specs.append(self.parameter(f"{prefix.get(role, role[0])}{i}", role))
        if not any(p.role == "out" for p in specs):
            specs.append(self.parameter(f"o{count}", "out"))
        return specs

    def extent(self, empty: bool = False) -> int:
        """A mode size: mostly small, sometimes a few tiles of a work-group (or 0)."""
        if self.flag(30 if self.style == "coopmatrix" else 10):
            return self.int(self.limits.max_extent + 1, 5 * self.limits.max_extent)
        if empty and self.flag(4):
            return 0
        return self.int(1, self.limits.max_extent)

    def parameter(self, name: str, role: str) -> ParamSpec:
        """A parameter of a role of parameters(), with the layout of its argument."""
        if role == "scalar":
            return self.scalar_parameter(name)
        element = self.element_type()
        if role == "shared":  # replaces the element type drawn above
            element = self.pick(self.types(SHARED_TYPES))
        order = self.int(0, 3 if role != "shared" else 2)
        if self.style == "coopmatrix" and self.flag(50):  # matrices
            order = 2
        extents = [self.extent(role in ("in", "group_in")) for _ in range(order)]
        if role.startswith("group"):
            return self.group_parameter(name, role, element, extents[:2])
        if role == "out":
            batch = len(extents) if self.flag(75) else 0
            extents.insert(batch, self.howmany)
            self.batch_modes[name] = batch
        mt, stride = self.layout(element, extents)
        return ParamSpec(name, mt, role, None, tuple(extents), stride)

    def scalar_parameter(self, name: str) -> ParamSpec:
        """A scalar parameter and its value: small integers, or float constants."""
        t = self.pick(self.types(SCALAR_PARAMETER_TYPES))
        if t.is_complex:
            value = complex(self.pick(FLOAT_CONSTANTS), self.pick(FLOAT_CONSTANTS))
        elif t.is_float:
            value = self.pick(FLOAT_CONSTANTS)
        else:
            lo, hi = value_range(t)
            value = self.int(max(lo, -4), min(hi, 12))
        return ParamSpec(name, t, "scalar", value)

    def group_parameter(
        self, name: str, role: str, element: ScalarType, extents: list[int]
    ) -> ParamSpec:
        """A group ('group_out': a member per work-group) with no, a static or a dynamic
        offset."""
        mt, stride = self.layout(element, extents)
        count = self.howmany if role == "group_out" else self.int(1, 3)
        offset, value = 0, 0
        if self.flag(40):
            value = self.int(1, 3)
            dynamic = self.allows("dynamic_offset") and self.flag(50)
            offset = None if dynamic else value
        spec_role = "out" if role == "group_out" else "in"
        gt = GroupType(mt, offset)
        return ParamSpec(name, gt, spec_role, None, tuple(extents), stride, count, value)

    def layout(self, element: ScalarType, extents: list[int]) -> tuple[MemrefType, tuple]:
        """A memref type for these extents and the strides an argument has at run time."""
        strided = self.allows("strided") and self.flag(30)
        stride: list[int] = []
        current = self.int(1, 2) if strided else 1
        for e in extents:
            stride.append(current)
            current = current * e + (self.int(0, 3) if strided else 0)
            current = max(current, 1) if strided else current
        dyn = self.allows("dynamic_shape")
        shape_t = [None if dyn and self.flag(25) else e for e in extents]
        if strided:
            stride_t = [None if dyn and self.flag(25) else s for s in stride]
            return MemrefType(element, tuple(shape_t), tuple(stride_t)), tuple(stride)
        return MemrefType.make(element, shape_t), tuple(stride)

    def setup(self, specs: list[ParamSpec], values: list[Value]) -> None:
        """Scalars and views of the parameters: an 'out' memref and a 'group_out' group are
        seen through the part that belongs to the work-group."""
        for spec, value in zip(specs, values):
            t = spec.type
            if spec.role == "scalar":
                v = spec.value
                self.add_scalar(Scalar(value, v, v, mag=abs(v)))
            elif isinstance(t, GroupType):
                self.setup_group(spec, value)
            elif spec.role == "out":
                self.setup_output(spec, value)
            else:
                root = Root(spec.role, t.element)
                self.add_view(View(value, root, spec.shape, spec.stride))

    def setup_group(self, spec: ParamSpec, value: Value) -> None:
        """Members of a group of inputs are loaded where used; a group of outputs gives the
        member of the work-group."""
        root = Root(spec.role, spec.type.memref.element)
        if spec.role == "in":
            self.groups.append(GroupValue(value, root, spec.count, spec.shape, spec.stride))
        else:
            member = self.emit(LoadInst(value, [self.group_id().value])).result
            self.add_view(View(member, root, spec.shape, spec.stride))

    def setup_output(self, spec: ParamSpec, value: Value) -> None:
        """The view of an 'out' memref without its batch mode, at the work-group's index."""
        root = Root("out", spec.type.element, exact=self.flag(30))
        batch = self.batch_modes[spec.name]
        slices: list[tuple[Value, Any]] = [(Constant(0, INDEX), "?") for _ in spec.shape]
        slices[batch] = (self.group_id().value, None)
        sub = self.emit(SubviewInst(value, slices)).result
        shape = spec.shape[:batch] + spec.shape[batch + 1 :]
        stride = spec.stride[:batch] + spec.stride[batch + 1 :]
        self.add_view(View(sub, root, shape, stride))

    def group_id(self) -> Scalar:
        """The group_id that indexes the batch modes (made once, at the top of the kernel)."""
        if self.gid is None:
            value = self.emit(GroupIdInst()).result
            self.gid = self.add_scalar(Scalar(value, 0, self.howmany - 1))
        return self.gid
