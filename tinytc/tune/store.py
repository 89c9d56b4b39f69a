"""Where tuning results live: one JSON record per problem under ``cache_dir()/tunings``.

A record is keyed by the problem, the optimization level, the OpenCL device and driver, and
the compiler version (a hash of the sources that generate code), so that a tiling found by
other code or on another device is never reused. ``tinytc.jit`` and the recipes read it on
every compile, so a record that cannot be trusted must never stop them: each record carries
the SHA-256 of its contents and is validated field by field on load, and a damaged one is
deleted with a warning (the next tuning writes it again). Storing is an optimization only:
an unusable directory (read-only, full, a file in its place) gives a warning, never an error.
Records are written to a temporary file and renamed, so readers see whole records or none.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..gemm import Tiling, check_tiling
from ..ir import Program
from .result import Trial, TuneResult

T = TypeVar("T")
FORMAT = 2  # the record layout; 2 added the checksum and the trials' notes

# Sources that do not decide the code a tiling gives: editing them keeps stored tunings.
NOT_CODE_GENERATION = ("tune/", "cli.py", "reference.py", "reference_spmd.py", "testing/")


class TuningWarning(RuntimeWarning):
    """A tuning result could not be stored, or a stored one was damaged and deleted."""


class DamagedRecord(ValueError):
    """A stored record that is not what tinytc writes (says which part)."""


@functools.cache
def compiler_version() -> str:
    """A hash of tinytc's Python sources that generate code: a tiling found by other code
    is not reused."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if not name.startswith(NOT_CODE_GENERATION) and not name.endswith("_tune.py"):
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def tunings_dir() -> Path:
    from ..runtime.device import cache_dir

    return cache_dir() / "tunings"


def tuning_path(kind: str, problem: str, device: Any, opt_level: int = 2) -> Path:
    """Where the best tiling of a problem on a device is stored."""
    key = [kind, problem, opt_level, device.name, device.driver_version, compiler_version()]
    name = hashlib.sha256(json.dumps(key).encode()).hexdigest()
    return tunings_dir() / f"{name}.json"


def _checksum(record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def store_record(path: Path, record: dict[str, Any]) -> bool:
    """Write ``record`` (with its checksum) to ``path``; False, with a TuningWarning, when
    the directory cannot take it."""
    record = {"format": FORMAT, **record}
    record["sha256"] = _checksum(record)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(record, f, indent=1)
        os.replace(tmp, path)
        return True
    except OSError as err:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        warnings.warn(
            f"tinytc: the tuning result is not stored ({err}); a later run searches again",
            TuningWarning,
            stacklevel=2,
        )
        return False


def load_record(path: Path, decode: Callable[[Any], T]) -> tuple[dict[str, Any], T] | None:
    """The record stored at ``path`` and its best tiling (``decode`` of its 'best', which
    raises DamagedRecord for what it cannot use), or None when there is none. A damaged
    record is deleted, with a TuningWarning."""
    try:
        data = path.read_bytes()
    except OSError:
        return None  # absent or unreadable: as if never tuned
    try:
        record = json.loads(data)
        _check_record(record)
        best = decode(record["best"])
    except (DamagedRecord, ValueError) as err:  # ValueError: not JSON, not UTF-8
        with contextlib.suppress(OSError):
            path.unlink()
        warnings.warn(
            f"tinytc: deleted the damaged tuning record {path} ({err})", TuningWarning, stacklevel=2
        )
        return None
    return record, best


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise DamagedRecord(what)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


TRIAL_FIELDS: dict[str, Callable[[Any], bool]] = {
    "candidate": lambda v: isinstance(v, str),
    "where": lambda v: isinstance(v, str),
    "seconds": lambda v: v is None or _is_number(v),
    "status": lambda v: isinstance(v, str),
    "relative": lambda v: v is None or _is_number(v),
    "note": lambda v: isinstance(v, str),
}


def _check_record(record: Any) -> None:
    """Raise DamagedRecord unless ``record`` has the layout ``store_record`` writes."""
    _expect(isinstance(record, dict), "not a JSON object")
    _expect(record.get("sha256") == _checksum(record), "its checksum does not match")
    _expect(record.get("format") == FORMAT, f"format {record.get('format')!r}, not {FORMAT}")
    for name in ("kind", "problem"):
        _expect(isinstance(record.get(name), str), f"{name} is not a string")
    for name in ("best_seconds", "default_seconds"):
        value = record.get(name)
        _expect(value is None or _is_number(value), f"{name} is not a number")
    trials = record.get("trials")
    _expect(isinstance(trials, list), "trials is not a list")
    for trial in trials:
        _expect(isinstance(trial, dict) and set(trial) == set(TRIAL_FIELDS), "a bad trial")
        for name, ok in TRIAL_FIELDS.items():
            _expect(ok(trial[name]), f"a trial's {name} is {trial[name]!r}")


def result_record(result: TuneResult, encode: Callable[[Any], Any]) -> dict[str, Any]:
    """The JSON of a result: the best, the default and every trial."""
    return {
        "kind": result.kind,
        "problem": result.problem,
        "best": encode(result.best),
        "default": encode(result.default),
        "best_seconds": result.best_seconds,
        "default_seconds": result.default_seconds,
        "trials": [
            {"candidate": str(t.candidate), "where": t.where, "seconds": t.seconds}
            | {"status": t.status, "relative": t.relative, "note": t.note}
            for t in result.trials
        ],
    }


def reused_result(
    kind: str, best: Any, default: Any, record: dict[str, Any], path: Path
) -> TuneResult:
    """The TuneResult of a stored record (searched False)."""
    trials = [
        Trial(t["candidate"], t["seconds"], t["status"], t["where"], t["relative"], t["note"])
        for t in record["trials"]
    ]
    seconds = record["best_seconds"], record["default_seconds"]
    result = TuneResult(kind, best, default, *seconds, trials, path, record["problem"])
    result.searched, result.stored = False, True
    return result


# -- program tilings ------------------------------------------------------------------------


def encode_tilings(tilings: dict[str, list[Tiling]]) -> dict[str, list[dict[str, Any]]]:
    return {k: [dataclasses.asdict(t) for t in ts] for k, ts in tilings.items()}


def decode_tiling(data: Any) -> Tiling:
    """A Tiling from its JSON fields, each of the right type and valid (check_tiling)."""
    names = [f.name for f in dataclasses.fields(Tiling)]
    _expect(isinstance(data, dict) and set(data) == set(names), f"a tiling has fields {data!r}")
    wg = data["work_group"]
    _expect(isinstance(wg, list) and len(wg) == 2, f"work_group is {wg!r}")
    flags = [f.name for f in dataclasses.fields(Tiling) if f.type == "bool"]
    for value in [*wg, *(data[n] for n in names[1:] if n not in flags)]:
        _expect(isinstance(value, int) and not isinstance(value, bool), f"a tiling's {value!r}")
    _expect(all(isinstance(data[n], bool) for n in flags), f"a tiling's flags: {data!r}")
    tiling = Tiling(**(data | {"work_group": tuple(wg)}))
    problem = check_tiling(tiling, tiling.work_group, 1)  # the kernel's subgroup is unknown here
    _expect(not problem and min(wg) >= 1 and tiling.prefetch >= 0, f"a bad tiling: {data}")
    return tiling


def decode_tilings(data: Any) -> dict[str, list[Tiling]]:
    """Program tilings (kernel name -> one Tiling per collective instruction) from JSON."""
    _expect(isinstance(data, dict), "best is not an object of kernels")
    out = {}
    for kernel, tilings in data.items():
        _expect(isinstance(tilings, list), f"the tilings of {kernel} are not a list")
        out[kernel] = [decode_tiling(t) for t in tilings]
    return out


def stored_program_tilings(
    source_or_program: str | Program, device: Any, opt_level: int
) -> dict[str, list[Tiling]] | None:
    """The stored tilings of a program on a device, or None (cheap when nothing is stored).
    ``tinytc.jit`` passes them to the runtime's jit."""
    if not tunings_dir().is_dir():
        return None
    from ..compiler import as_program  # not on the way of jit when nothing is stored

    text = str(as_program(source_or_program))
    found = load_record(tuning_path("program", text, device, opt_level), decode_tilings)
    return None if found is None else found[1]
