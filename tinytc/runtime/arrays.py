"""The types of the arrays that kernels and recipes take, for annotations (the checks at a
call are tinytc.arguments'): numpy arrays, pyopencl arrays, and any tensor that exports
DLPack (PyTorch, JAX) from host memory. Neither pyopencl nor a tensor library is imported
to name them (the aliases are strings that type checkers read)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import pyopencl.array as cla


class DLPackArray(Protocol):
    """A tensor that exports DLPack (numpy arrays do too): bound without a copy when its
    memory is the host's (device type 1)."""

    def __dlpack__(self, *, stream: int | None = None) -> object: ...

    def __dlpack_device__(self) -> tuple[int, int]: ...


# An array as tinytc works on it: host memory as numpy sees it, or a pyopencl array.
HostOrDevice: TypeAlias = "np.ndarray | cla.Array"
# An array as a call takes it.
Array: TypeAlias = "np.ndarray | cla.Array | DLPackArray"
