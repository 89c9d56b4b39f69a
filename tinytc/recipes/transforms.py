"""Coordinate transforms: index maps from the coordinates of a view (upper) to the coordinates
of the tensor beneath it (lower), composed in layers, as implicit-GEMM lowerings use them.

Coordinates are integer expressions in affine normal form (``Expr``: constant plus integer
multiples of atoms; an atom is a symbol with a known range or a floor division or remainder by
a constant). Building an expression simplifies it with what is known at generation time, so
a transform whose parameters and ranges decide the result costs no division at run time: a
merge of lengths (1, H, W) gives no division for the 1, ``(4 a + 2) // 4`` is ``a``, and a
padding predicate whose range is always inside the tensor disappears. ``Emitter`` writes the
expressions that remain as tensor-language index arithmetic; ``evaluate`` computes them with
numpy, which is what the tests compare against.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias, Union

import numpy as np

Atom = Union["Sym", "Div", "Mod"]


@dataclass(frozen=True)
class Sym:
    """A named coordinate known to lie in [0, extent)."""

    name: str
    extent: int


@dataclass(frozen=True)
class Div:
    """floor(arg / divisor), divisor > 1."""

    arg: Expr
    divisor: int


@dataclass(frozen=True)
class Mod:
    """arg mod divisor (non-negative), divisor > 1."""

    arg: Expr
    divisor: int


@dataclass(frozen=True)
class Expr:
    """const + sum(coef * atom); terms sorted by repr, no zero coefficients."""

    terms: tuple[tuple[Atom, int], ...] = ()
    const: int = 0

    def __add__(self, other: Expr | int) -> Expr:
        o = as_expr(other)
        coefs: dict[Atom, int] = dict(self.terms)
        for atom, c in o.terms:
            coefs[atom] = coefs.get(atom, 0) + c
        return _make(coefs, self.const + o.const)

    __radd__ = __add__

    def __neg__(self) -> Expr:
        return self * -1

    def __sub__(self, other: Expr | int) -> Expr:
        return self + (-as_expr(other))

    def __rsub__(self, other: Expr | int) -> Expr:
        return as_expr(other) - self

    def __mul__(self, k: int) -> Expr:
        if not isinstance(k, int):
            raise TypeError("coordinate expressions multiply by integer constants only")
        return _make({a: c * k for a, c in self.terms}, self.const * k)

    __rmul__ = __mul__

    @property
    def is_const(self) -> bool:
        return not self.terms

    def bounds(self) -> tuple[int, int]:
        """Smallest and largest value the expression can take (both inclusive)."""
        lo = hi = self.const
        for atom, c in self.terms:
            a_lo, a_hi = atom_bounds(atom)
            lo += min(c * a_lo, c * a_hi)
            hi += max(c * a_lo, c * a_hi)
        return lo, hi

    def split(self, keep: Callable[[Atom], bool]) -> tuple[Expr, Expr]:
        """(the terms whose atom ``keep`` accepts, the rest with the constant)."""
        kept = {a: c for a, c in self.terms if keep(a)}
        rest = {a: c for a, c in self.terms if not keep(a)}
        return _make(kept, 0), _make(rest, self.const)


def _make(coefs: Mapping[Atom, int], const: int) -> Expr:
    terms = tuple(sorted(((a, c) for a, c in coefs.items() if c), key=lambda t: repr(t[0])))
    return Expr(terms, const)


def as_expr(x: Expr | int) -> Expr:
    return x if isinstance(x, Expr) else Expr((), int(x))


def sym(name: str, extent: int) -> Expr:
    """The coordinate ``name`` in [0, extent); an extent of 1 makes it the constant 0."""
    if extent < 1:
        raise ValueError(f"coordinate {name} needs a positive extent, got {extent}")
    return Expr() if extent == 1 else Expr(((Sym(name, extent), 1),))


def atom_bounds(atom: Atom) -> tuple[int, int]:
    if isinstance(atom, Sym):
        return 0, atom.extent - 1
    lo, hi = atom.arg.bounds()
    if isinstance(atom, Div):
        return lo // atom.divisor, hi // atom.divisor
    if lo // atom.divisor == hi // atom.divisor:
        return lo % atom.divisor, hi % atom.divisor
    return 0, atom.divisor - 1


def floordiv(a: Expr | int, d: int) -> Expr:
    """floor(a / d), simplified: multiples of d leave the division, a bounded rest folds."""
    a = as_expr(a)
    if d < 1:
        raise ValueError(f"division by {d}")
    if d == 1:
        return a
    whole = {x: c // d for x, c in a.terms if c % d == 0}
    rest = _make({x: c for x, c in a.terms if c % d}, a.const % d)
    q = _make(whole, a.const // d)
    lo, hi = rest.bounds()
    if lo // d == hi // d:
        return q + lo // d
    if rest.const == 0 and len(rest.terms) == 1 and rest.terms[0][1] == 1:
        inner = rest.terms[0][0]
        if isinstance(inner, Div):  # (x // e) // d is x // (e d)
            return q + floordiv(inner.arg, inner.divisor * d)
    return q + Expr(((Div(rest, d), 1),))


def mod(a: Expr | int, d: int) -> Expr:
    """a mod d (non-negative), simplified like ``floordiv``."""
    a = as_expr(a)
    if d < 1:
        raise ValueError(f"remainder by {d}")
    if d == 1:
        return Expr()
    rest = _make({x: c for x, c in a.terms if c % d}, a.const % d)
    lo, hi = rest.bounds()
    if lo // d == hi // d:
        return rest - (lo // d) * d
    return Expr(((Mod(rest, d), 1),))


# What an expression evaluates to: an int, or an integer numpy array for many points at once.
Value: TypeAlias = int | np.ndarray


def evaluate(e: Expr | int, env: Mapping[str, Value]) -> Value:
    """The value of an expression with numpy semantics (symbols looked up in env)."""
    e = as_expr(e)
    total: Value = e.const
    for atom, c in e.terms:
        total = total + c * _atom_value(atom, env)
    return total


def _atom_value(atom: Atom, env: Mapping[str, Value]) -> Value:
    if isinstance(atom, Sym):
        return env[atom.name]
    v = evaluate(atom.arg, env)
    return v // atom.divisor if isinstance(atom, Div) else v % atom.divisor


@dataclass(frozen=True)
class InRange:
    """The predicate lo <= expr < hi."""

    expr: Expr
    lo: int
    hi: int


def in_range(e: Expr, lo: int, hi: int) -> list[InRange] | None:
    """[] when always true, None when never true, else the one predicate."""
    e_lo, e_hi = e.bounds()
    if e_lo >= lo and e_hi < hi:
        return []
    if e_hi < lo or e_lo >= hi:
        return None
    return [InRange(e, lo, hi)]


def holds(preds: Iterable[InRange], env: Mapping[str, Value]) -> bool | np.ndarray:
    ok: bool | np.ndarray = True
    for p in preds:
        v = evaluate(p.expr, env)
        ok = ok & (v >= p.lo) & (v < p.hi)
    return ok


# --- the transforms ------------------------------------------------------------------------


class Transform:
    """Maps a tuple of upper coordinates to a tuple of lower ones."""

    def upper_lengths(self, lower: Sequence[int]) -> tuple[int, ...]:
        raise NotImplementedError

    def lower(self, upper: Sequence[Expr], lower_lengths: Sequence[int]) -> Lowered:
        raise NotImplementedError


@dataclass(frozen=True)
class Lowered:
    coords: tuple[Expr, ...]
    valid: list[InRange] | None  # None: never valid


@dataclass(frozen=True)
class PassThrough(Transform):
    def upper_lengths(self, lower: Sequence[int]) -> tuple[int, ...]:
        return (lower[0],)

    def lower(self, upper: Sequence[Expr], lower_lengths: Sequence[int]) -> Lowered:
        return Lowered((upper[0],), [])


@dataclass(frozen=True)
class Pad(Transform):
    """Upper u in [0, left + n + right) reads lower u - left; valid inside [0, n)."""

    left: int
    right: int

    def upper_lengths(self, lower: Sequence[int]) -> tuple[int, ...]:
        return (lower[0] + self.left + self.right,)

    def lower(self, upper: Sequence[Expr], lower_lengths: Sequence[int]) -> Lowered:
        x = upper[0] - self.left
        return Lowered((x,), in_range(x, 0, lower_lengths[0]))


@dataclass(frozen=True)
class Slice(Transform):
    """Upper u in [0, end - begin) reads lower begin + u."""

    begin: int
    end: int

    def upper_lengths(self, lower: Sequence[int]) -> tuple[int, ...]:
        return (self.end - self.begin,)

    def lower(self, upper: Sequence[Expr], lower_lengths: Sequence[int]) -> Lowered:
        return Lowered((upper[0] + self.begin,), [])


@dataclass(frozen=True)
class Embed(Transform):
    """Upper (u_0, ..) of the given lengths reads lower offset + sum(coefficient_i u_i)."""

    lengths: tuple[int, ...]
    coefficients: tuple[int, ...]
    offset: int = 0

    def upper_lengths(self, lower: Sequence[int]) -> tuple[int, ...]:
        return self.lengths

    def lower(self, upper: Sequence[Expr], lower_lengths: Sequence[int]) -> Lowered:
        x = as_expr(self.offset)
        for u, c in zip(upper, self.coefficients):
            x = x + u * c
        return Lowered((x,), [])


@dataclass(frozen=True)
class Merge(Transform):
    """One upper coordinate in [0, prod(lengths)) reads the lower coordinates of these
    lengths in row-major order (the last one fastest)."""

    def upper_lengths(self, lower: Sequence[int]) -> tuple[int, ...]:
        return (math.prod(lower),)

    def lower(self, upper: Sequence[Expr], lower_lengths: Sequence[int]) -> Lowered:
        coords = []
        for i, n in enumerate(lower_lengths):
            inner = math.prod(lower_lengths[i + 1 :])
            q = floordiv(upper[0], inner)
            coords.append(q if i == 0 else mod(q, n))
        return Lowered(tuple(coords), [])


@dataclass(frozen=True)
class Unmerge(Transform):
    """Upper coordinates of these lengths read one lower coordinate, row-major."""

    lengths: tuple[int, ...]

    def upper_lengths(self, lower: Sequence[int]) -> tuple[int, ...]:
        return self.lengths

    def lower(self, upper: Sequence[Expr], lower_lengths: Sequence[int]) -> Lowered:
        x = Expr()
        for i, u in enumerate(upper):
            x = x + u * math.prod(self.lengths[i + 1 :])
        return Lowered((x,), [])


@dataclass(frozen=True)
class Step:
    """One transform of a layer: it takes the named upper coordinates to the lower ones."""

    transform: Transform
    upper: tuple[str, ...]
    lower: tuple[str, ...]


@dataclass(frozen=True)
class View:
    """A tensor with named dimensions seen through layers of transforms, top layer first.

    Every layer must consume each coordinate of the layer below exactly once.
    """

    lengths: Mapping[str, int]  # the tensor's dimensions, bottom
    layers: tuple[tuple[Step, ...], ...]

    def all_lengths(self) -> dict[str, int]:
        """The length of every coordinate name at every layer."""
        lengths = dict(self.lengths)
        for layer in reversed(self.layers):
            for step in layer:
                ups = step.transform.upper_lengths([lengths[n] for n in step.lower])
                lengths.update(zip(step.upper, ups))
        return lengths

    def symbols(self, names: Iterable[str]) -> dict[str, Expr]:
        lengths = self.all_lengths()
        return {n: sym(n, lengths[n]) for n in names}

    def lower(self, coords: Mapping[str, Expr | int]) -> Lowered:
        """The tensor coordinates, in the order of ``lengths``, and the validity of a point
        given by coordinates of the top layer (or of any layer, named)."""
        lengths = self.all_lengths()
        env = {k: as_expr(v) for k, v in coords.items()}
        valid: list[InRange] | None = []
        for layer in self.layers:
            for step in layer:
                if not all(n in env for n in step.upper):
                    continue  # the caller gave this layer's lower coordinates directly
                out = step.transform.lower(
                    [env[n] for n in step.upper], [lengths[n] for n in step.lower]
                )
                env.update(zip(step.lower, out.coords))
                valid = None if valid is None or out.valid is None else valid + out.valid
        return Lowered(tuple(env[n] for n in self.lengths), valid)


def linear_offset(coords: Sequence[Expr], strides: Sequence[int]) -> Expr:
    """The element offset of coordinates with these strides."""
    x = Expr()
    for c, s in zip(coords, strides):
        x = x + c * s
    return x


# --- emission --------------------------------------------------------------------------------


class Emitter:
    """Writes expressions as tensor-language index arithmetic, each distinct subexpression
    once per scope; ``line`` receives every instruction line."""

    def __init__(self, line: Callable[[str], None], prefix: str = "t") -> None:
        self.line = line
        self.prefix = prefix
        self.count = 0
        self.scopes: list[dict[Hashable, str]] = [{}]

    def fresh(self, hint: str = "") -> str:
        self.count += 1
        return f"%{self.prefix}{hint}{self.count}"

    def bind(self, name: str, value: str) -> None:
        """Symbol ``name`` is the SSA value ``value`` in the current scope."""
        self.scopes[-1][Sym(name, 0)] = value

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def _lookup(self, key: Hashable) -> str | None:
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    def _remember(self, key: Hashable, value: str) -> str:
        self.scopes[-1][key] = value
        return value

    def value(self, e: Expr | int) -> str:
        """An operand holding e: a literal for constants, else an SSA name."""
        e = as_expr(e)
        if e.is_const:
            return str(e.const)
        known = self._lookup(e)
        if known:
            return known
        acc: str | None = None
        for atom, c in e.terms:
            a = self._atom(atom)
            term = a if c == 1 else self._op("mul", a, str(c))
            acc = term if acc is None else self._op("add", acc, term)
        assert acc is not None
        if e.const:
            acc = self._op("add", acc, str(e.const))
        return self._remember(e, acc)

    def _atom(self, atom: Atom) -> str:
        key = Sym(atom.name, 0) if isinstance(atom, Sym) else atom
        known = self._lookup(key)
        if known:
            return known
        if isinstance(atom, Sym):
            raise KeyError(f"symbol {atom.name} has no value in this scope")
        op = "div" if isinstance(atom, Div) else "rem"
        return self._remember(key, self._op(op, self.value(atom.arg), str(atom.divisor)))

    def _op(self, op: str, a: str, b: str) -> str:
        key = (op, a, b)
        known = self._lookup(key)
        if known:
            return known
        name = self.fresh()
        self.line(f"{name} = arith.{op} {a}, {b} : index")
        return self._remember(key, name)

    def predicate(self, preds: list[InRange] | None) -> str:
        """An i1 operand that is true where all predicates hold."""
        if preds is None:
            return "false"
        acc: str | None = None
        for p in preds:
            for cond, bound in (("ge", p.lo), ("lt", p.hi)):
                lo, hi = p.expr.bounds()
                if (cond == "ge" and lo >= bound) or (cond == "lt" and hi < bound):
                    continue  # this side always holds
                name = self._emit(("cmp", cond, self.value(p.expr), bound), "ok")
                acc = name if acc is None else self._emit(("and", acc, name), "ok")
        return acc or "true"

    def _emit(self, key: tuple[Hashable, ...], hint: str) -> str:
        known = self._lookup(key)
        if known:
            return known
        name = self.fresh(hint)
        op, a, b = key[0], key[-2], key[-1]
        if op == "cmp":
            self.line(f"{name} = cmp.{key[1]} {a}, {b} : index")
        else:
            self.line(f"{name} = arith.and {a}, {b} : i1")
        return self._remember(key, name)
