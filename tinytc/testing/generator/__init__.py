"""The generator of one random kernel that is free of undefined behaviour (what it promises is
in ``tinytc.testing.strategies``).

``KernelGenerator`` is built in layers, each a class that extends the one below it and uses
only what lies below:

- ``base``: drawing choices (everything shrinks towards index 0, False and the lower bound)
  and the scopes of values and views;
- ``scalars``: constants, arith, cast and cmp with the intervals of their results, indices
  within bounds;
- ``memory``: loads and stores, and which elements the iterations of a foreach may touch;
- ``views``: subview, expand, fuse, group members and allocas;
- ``collectives``: linear algebra on views, with the inputs and outputs it needs;
- ``coopmatrix``: parallel regions with cooperative matrices, free of races between
  subgroups;
- ``regions``: statements drawn by weight, regions, for, if, foreach and parallel;
- ``kernel``: the parameters, their arguments, the attributes and the body of a kernel.

``model`` holds what the layers know about values and memory; ``features`` what ``Limits``
may switch off.
"""

from .features import ELEMENT_TYPES, FEATURES, FLOAT_TYPES, INT_TYPES, Limits, type_feature
from .kernel import KernelGenerator
from .model import Scalar

__all__ = [
    "ELEMENT_TYPES",
    "FEATURES",
    "FLOAT_TYPES",
    "INT_TYPES",
    "KernelGenerator",
    "Limits",
    "Scalar",
    "type_feature",
]
