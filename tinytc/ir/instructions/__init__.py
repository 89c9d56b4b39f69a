"""One class per instruction of the language."""

from .arith import ArithInst, ArithUnaryInst, CastInst, CompareInst
from .atomic import AtomicInst, AtomicLoadInst, AtomicStoreInst, AtomicUpdateInst
from .control import IfInst, YieldInst
from .coopmatrix import (
    CoopMatrixInst,
    CoopMatrixLoadInst,
    CoopMatrixPrefetchInst,
    CoopMatrixStoreInst,
    ParallelInst,
)
from .coopmatrix_atomic import (
    CoopMatrixAtomicLoadInst,
    CoopMatrixAtomicStoreInst,
    CoopMatrixAtomicUpdateInst,
)
from .coopmatrix_blend import CoopMatrixAtomicBlendInst
from .coopmatrix_compute import (
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixMulAddInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
)
from .cumsum import CumsumInst
from .foreach_tile import ForeachTileInst
from .linalg import (
    AxpbyInst,
    GemmInst,
    GemvInst,
    GerInst,
    HadamardProductInst,
    LinalgInst,
    SumInst,
)
from .loops import ForeachInst, ForInst
from .math import MATH_UNARY, MathInst
from .memory import AllocaInst, LifetimeStopInst, LoadInst, StoreInst
from .memref import AssociatedInst, ExpandInst, FuseInst, SizeInst, SubviewInst
from .subgroup import (
    SUBGROUP_OPERATIONS,
    SubgroupBroadcastInst,
    SubgroupInst,
    SubgroupOperationInst,
)
from .workgroup import (
    SUBGROUP_BUILTINS,
    BarrierInst,
    GroupIdInst,
    GroupSizeInst,
    NumSubgroupsInst,
    SubgroupBuiltinInst,
    SubgroupIdInst,
    SubgroupLocalIdInst,
    SubgroupSizeBuiltinInst,
)

# the cooperative_matrix_* instructions (check-ir keeps them in parallel regions)
COOPMATRIX_INSTS = (
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    CoopMatrixMulAddInst,
    CoopMatrixScaleInst,
    CoopMatrixConstructInst,
    CoopMatrixApplyInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixReduceInst,
    CoopMatrixPrefetchInst,
)

__all__ = [
    "COOPMATRIX_INSTS",
    "MATH_UNARY",
    "SUBGROUP_BUILTINS",
    "SUBGROUP_OPERATIONS",
    "AllocaInst",
    "ArithInst",
    "ArithUnaryInst",
    "AssociatedInst",
    "AtomicInst",
    "AtomicLoadInst",
    "AtomicStoreInst",
    "AtomicUpdateInst",
    "AxpbyInst",
    "BarrierInst",
    "CastInst",
    "CompareInst",
    "CoopMatrixApplyInst",
    "CoopMatrixAtomicBlendInst",
    "CoopMatrixAtomicLoadInst",
    "CoopMatrixAtomicStoreInst",
    "CoopMatrixAtomicUpdateInst",
    "CoopMatrixConstructInst",
    "CoopMatrixExtractInst",
    "CoopMatrixInsertInst",
    "CoopMatrixInst",
    "CoopMatrixLoadInst",
    "CoopMatrixMulAddInst",
    "CoopMatrixPrefetchInst",
    "CoopMatrixReduceInst",
    "CoopMatrixScaleInst",
    "CoopMatrixStoreInst",
    "CumsumInst",
    "ExpandInst",
    "ForInst",
    "ForeachInst",
    "ForeachTileInst",
    "FuseInst",
    "GemmInst",
    "GemvInst",
    "GerInst",
    "GroupIdInst",
    "GroupSizeInst",
    "HadamardProductInst",
    "IfInst",
    "LifetimeStopInst",
    "LinalgInst",
    "LoadInst",
    "MathInst",
    "NumSubgroupsInst",
    "ParallelInst",
    "SizeInst",
    "StoreInst",
    "SubgroupBroadcastInst",
    "SubgroupBuiltinInst",
    "SubgroupIdInst",
    "SubgroupInst",
    "SubgroupLocalIdInst",
    "SubgroupOperationInst",
    "SubgroupSizeBuiltinInst",
    "SubviewInst",
    "SumInst",
    "YieldInst",
]
