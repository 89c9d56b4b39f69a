"""One class per instruction of the language."""

from .arith import ArithInst, ArithUnaryInst, CastInst, CompareInst
from .control import (
    BarrierInst,
    ForeachInst,
    ForInst,
    GroupIdInst,
    GroupSizeInst,
    IfInst,
    YieldInst,
)
from .linalg import (
    AxpbyInst,
    GemmInst,
    GemvInst,
    GerInst,
    HadamardProductInst,
    LinalgInst,
    SumInst,
)
from .memref import (
    AllocaInst,
    ExpandInst,
    FuseInst,
    LifetimeStopInst,
    LoadInst,
    SizeInst,
    StoreInst,
    SubviewInst,
)

__all__ = [
    "AllocaInst",
    "ArithInst",
    "ArithUnaryInst",
    "AxpbyInst",
    "BarrierInst",
    "CastInst",
    "CompareInst",
    "ExpandInst",
    "ForInst",
    "ForeachInst",
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
    "SizeInst",
    "StoreInst",
    "SubviewInst",
    "SumInst",
    "YieldInst",
]
