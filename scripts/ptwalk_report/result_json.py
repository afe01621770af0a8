# SPDX-License-Identifier: GPL-2.0
"""Reading a ptwalk.result/1 document member by member (result_types.py
builds its dataclasses with it): each member's type checked, an
enumeration's text turned into its member, and anything else one
ResultError naming the file and the member's path."""
from __future__ import annotations

import enum
from pathlib import Path
from typing import Callable, TypeVar


class InputError(Exception):
    """Bad input: the CLI prints it on one line and exits 2."""


class ResultError(InputError):
    """A result document that does not parse: the file and the member."""

    def __init__(self, path: Path, where: str, what: str) -> None:
        super().__init__(f"{path}: {where or 'document'}: {what}")
        self.path = path
        self.where = where
        self.what = what


E = TypeVar("E", bound=enum.Enum)
T = TypeVar("T")


class _Obj:
    """A JSON object at a member path, read member by member with types."""

    def __init__(self, path: Path, where: str, value: object) -> None:
        if not isinstance(value, dict):
            raise ResultError(path, where, f"is {_kind(value)}, want an object")
        self.path, self.where, self.d = path, where, value

    def at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, what: str) -> ResultError:
        return ResultError(self.path, self.at(key), what)

    def has(self, key: str) -> bool:
        return self.d.get(key) is not None

    def _get(self, key: str, required: bool) -> object:
        if key not in self.d:
            if required:
                raise self.fail(key, "missing")
            return None
        return self.d[key]

    def int_(self, key: str) -> int:
        v = self.opt_int(key, required=True)
        assert v is not None
        return v

    def opt_int(self, key: str, *, required: bool = False) -> int | None:
        v = self._get(key, required)
        if v is None and not required:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                return int(v)
            raise self.fail(key, f"is {_kind(v)}, want an integer")
        return v

    def opt_float(self, key: str) -> float | None:
        v = self._get(key, False)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(key, f"is {_kind(v)}, want a number")
        return float(v)

    def str_(self, key: str) -> str:
        v = self._get(key, True)
        if not isinstance(v, str):
            raise self.fail(key, f"is {_kind(v)}, want a string")
        return v

    def opt_str(self, key: str) -> str | None:
        return self.str_(key) if self.has(key) else None

    def bool_(self, key: str, default: bool = False) -> bool:
        v = self._get(key, False)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.fail(key, f"is {_kind(v)}, want true or false")
        return v

    def opt_bool(self, key: str) -> bool | None:
        return self.bool_(key) if self.has(key) else None

    def enum(self, key: str, cls: type[E]) -> E:
        return self.to_enum(self.at(key), self.str_(key), cls)

    def opt_enum(self, key: str, cls: type[E]) -> E | None:
        return self.enum(key, cls) if self.has(key) else None

    def to_enum(self, where: str, text: object, cls: type[E]) -> E:
        try:
            return cls(text)
        except ValueError:
            known = ", ".join(str(m.value) for m in cls)
            raise ResultError(self.path, where,
                              f"unknown {cls.__name__} {text!r} (known: {known})") from None

    def obj(self, key: str) -> _Obj:
        return _Obj(self.path, self.at(key), self._get(key, True))

    def opt_obj(self, key: str) -> _Obj | None:
        return self.obj(key) if self.has(key) else None

    def opt_parsed(self, key: str, parse: Callable[[_Obj], T]) -> T | None:
        """parse(the object at key), None when key is absent."""
        o = self.opt_obj(key)
        return parse(o) if o is not None else None

    def list_(self, key: str, required: bool = True) -> list[object]:
        v = self._get(key, required)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(key, f"is {_kind(v)}, want an array")
        return v

    def objs(self, key: str, parse: Callable[[_Obj, int], T],
             required: bool = True) -> tuple[T, ...]:
        return tuple(parse(_Obj(self.path, f"{self.at(key)}[{i}]", x), i)
                     for i, x in enumerate(self.list_(key, required)))

    def strs(self, key: str) -> tuple[str, ...]:
        out = []
        for i, x in enumerate(self.list_(key, False)):
            if not isinstance(x, str):
                raise ResultError(self.path, f"{self.at(key)}[{i}]",
                                  f"is {_kind(x)}, want a string")
            out.append(x)
        return tuple(out)

    def enums(self, key: str, cls: type[E]) -> tuple[E, ...]:
        """The array of enumeration values at key; () when absent."""
        return tuple(self.to_enum(f"{self.at(key)}[{i}]", v, cls)
                     for i, v in enumerate(self.strs(key)))

    def keyed(self, key: str, cls: type[E], parse: Callable[[_Obj], T]) -> dict[E, T]:
        o = self.opt_obj(key)
        if o is None:
            return {}
        return {o.to_enum(o.at(k), k, cls): parse(o.obj(k)) for k in o.d}

    def numbers(self, key: str, cls: type[E]) -> dict[E, float]:
        o = self.opt_obj(key)
        if o is None:
            return {}
        out: dict[E, float] = {}
        for k in o.d:
            v = o.opt_float(k)
            if v is not None:
                out[o.to_enum(o.at(k), k, cls)] = v
        return out

    def pair(self, key: str) -> tuple[float, float] | None:
        if not self.has(key):
            return None
        v = self.list_(key)
        if len(v) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                  for x in v):
            raise self.fail(key, "want [lo, hi]")
        return float(v[0]), float(v[1])  # type: ignore[arg-type]


def _kind(v: object) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(v), type(v).__name__)
