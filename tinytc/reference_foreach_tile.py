"""The reference of foreach_tile: the tiles, numbered mode 0 fastest, are dealt round-robin to
the subgroups of the work-group, which run the body as a parallel region does (tinytc/
reference_spmd.py); every work-item of a subgroup sees its tile's offsets and sizes."""

from __future__ import annotations

import itertools
import math

import numpy as np

from . import ir
from .reference import Frame, handles, scalar
from .reference_spmd import Spmd, Varying, launch_of


@handles(ir.ForeachTileInst)
def _foreach_tile(f: Frame, inst: ir.ForeachTileInst) -> None:
    launch = launch_of(f.func)
    inst.check_subgroup_size(launch.subgroup_size)
    spmd = Spmd(f, launch)
    starts = [int(f.get(v)) for v in inst.starts]
    stops = [int(f.get(v)) for v in inst.stops]
    counts = [max(0, math.ceil((b - a) / t)) for a, b, t in zip(starts, stops, inst.tile_shape)]
    tiles = (point[::-1] for point in itertools.product(*(range(c) for c in reversed(counts))))
    sgs, nsg = spmd.sgs, spmd.nsg
    while batch := list(itertools.islice(tiles, nsg)):
        mask = np.zeros(spmd.num_work_items, dtype=bool)
        mask[: len(batch) * sgs] = True
        for m in range(inst.dim):
            t = inst.loop_types[m]
            offsets = [starts[m] + tile[m] * inst.tile_shape[m] for tile in batch]
            sizes = [min(inst.tile_shape[m], stops[m] - o) for o in offsets]
            for param, values in ((inst.offsets[m], offsets), (inst.sizes[m], sizes)):
                per_item = [values[w // sgs] if mask[w] else None for w in range(len(mask))]
                spmd.env[param] = Varying([None if v is None else scalar(v, t) for v in per_item])
        spmd.region(inst.body, mask)
