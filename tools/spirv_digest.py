"""SHA-256 of the SPIR-V that tinytc emits for every test program on every target, and for
every bench shape (CPU and sm_90) and conv2d bench layer: the check that a restructuring
changes no emitted byte.

    python tools/spirv_digest.py --out before.json          (record)
    python tools/spirv_digest.py --against before.json      (compare; exit 1 on a difference)

A program a target refuses is recorded by its error message, so a change of refusal shows too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
from collections.abc import Callable, Iterator

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tinytc  # noqa: E402
import tinytc.target  # noqa: E402
from tinytc.errors import CompilationError  # noqa: E402

TARGETS = tuple(tinytc.target.TARGETS)  # cpu, pvc, dg2


def _bench() -> object:
    sys.path.insert(0, str(ROOT / "tools"))
    import bench

    return bench


def sources() -> Iterator[tuple[str, tuple[str, ...], Callable[[str], bytes]]]:
    """(name, targets, compile for a target) of every program of the record."""
    for path in sorted((ROOT / "tests" / "programs").glob("*.ir")):
        text = path.read_text()
        yield f"program/{path.stem}", TARGETS, lambda t, text=text: tinytc.compile(text, t)
    bench = _bench()
    for ty in ("f32", "f64", "c32", "c64"):
        # the shapes tools/bench.py and (real types) tools/bench_gpu.py time
        targets = ("cpu",) if ty.startswith("c") else ("cpu", "sm_90")
        for n in (8, 16, 32, 64):
            for trans in ("nn", "tn", "nt", "tt"):
                text = bench.gemm_source(ty, n, trans[0], trans[1])
                yield f"gemm/{ty}-{n}-{trans}", targets, lambda t, s=text: tinytc.compile(s, t)
        chain = bench.chain_source(ty)
        yield f"chain/{ty}", targets, lambda t, s=chain: tinytc.compile(s, t)
    yield from conv_sources()


def conv_sources() -> Iterator[tuple[str, tuple[str, ...], Callable[[str], bytes]]]:
    sys.path.insert(0, str(ROOT / "tools"))
    import bench_conv

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    for name in bench_conv.SHAPES:
        for dtype, targets in (("f32", ("cpu",)), ("f16", ("pvc",))):

            def build(t: str, name: str = name, dtype: str = dtype) -> bytes:
                conv = bench_conv.recipe_of(name, dtype=dtype, target=t)
                return tinytc.compile(conv.source, t)

            yield f"{name}/{dtype}", targets, build


def record() -> dict[str, str]:
    out: dict[str, str] = {}
    for name, targets, build in sources():
        for t in targets:
            try:
                data = build(t)
            except (CompilationError, ValueError) as err:
                data = f"refused: {err}".encode()
            out[f"{name}@{t}"] = hashlib.sha256(data).hexdigest()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path)
    ap.add_argument("--against", type=pathlib.Path)
    args = ap.parse_args()
    now = record()
    if args.out:
        args.out.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    if args.against:
        before = json.loads(args.against.read_text())
        changed = sorted(k for k in before.keys() & now.keys() if before[k] != now[k])
        new, gone = sorted(now.keys() - before.keys()), sorted(before.keys() - now.keys())
        for k in changed:
            print(f"changed: {k}")
        for k in gone:
            print(f"gone: {k}")
        print(f"{len(now)} modules, {len(changed)} changed, {len(new)} new, {len(gone)} gone")
        return 1 if changed or gone else 0
    print(f"{len(now)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
