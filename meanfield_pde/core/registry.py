"""Named registries (IMEX tableaus, particle integrators, normalisation schemes): one pattern.

An entry is registered by a decorator on the function that builds it (or on
the entry itself); the key is given once, and the first line of the
function's docstring is the entry's source (paper + section or equation),
so each registry can list where every entry comes from::

    TABLEAUS = Registry("IMEX tableau", "time.scheme")

    @TABLEAUS.register("ARS222", build=True)
    def _ars222():
        \"\"\"Ascher, Ruuth & Spiteri 1997 §2.6: the (2,2,2) L-stable scheme.\"\"\"
        return IMEXTableau(...)

``TABLEAUS["ARS222"]`` is the entry, ``TABLEAUS.lookup(name)`` refuses an
unknown name with a ConfigError naming the field and the keys, and the tests
parametrize over ``list(TABLEAUS)`` so that a new entry is tested with the
others (Dedalus registers its timesteppers the same way: ``@add_scheme``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """A read-only mapping name -> entry, filled by :meth:`register`.

    Parameters
    ----------
    what : str
        What an entry is ("IMEX tableau"), for messages.
    field : str
        The argument or case key that names an entry ("time.scheme"), for messages.
    """

    def __init__(self, what: str, field: str):
        self.what, self.field = what, field
        self._entries: dict[str, T] = {}
        self.sources: dict[str, str] = {}

    def register(self, name: str, *, build: bool = False, make: Callable | None = None) -> Callable:
        """Decorator: register the decorated object as ``name`` (``build``: what calling it
        returns; ``make``: ``make(obj)``, e.g. a record around a step function).

        Raises
        ------
        ConfigError
            If ``name`` is taken or the object has no docstring naming its source.
        """
        def decorate(obj):
            source = (getattr(obj, "__doc__", None) or "").strip()
            if not source:
                raise ConfigError(f"{self.what} {name!r}: needs a docstring whose first line "
                                  "names its source")
            entry = make(obj) if make is not None else obj() if build else obj
            self.add(name, entry, source.splitlines()[0])
            return obj
        return decorate

    def add(self, name: str, entry: T, source: str) -> None:
        """Register ``entry`` as ``name`` with a one-line ``source``; ConfigError if taken."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{self.what} name {name!r}: must be a non-empty string")
        if name in self._entries:
            raise ConfigError(f"{self.what} {name!r}: already registered")
        self._entries[name] = entry
        self.sources[name] = source

    def remove(self, name: str) -> None:
        """Unregister ``name`` (an entry added at run time, e.g. by a test)."""
        self._entries.pop(name, None)
        self.sources.pop(name, None)

    def lookup(self, name, field: str | None = None) -> T:
        """The entry called ``name``; ConfigError naming the field (``field`` or the
        registry's) and the keys if unknown."""
        if not isinstance(name, str) or name not in self._entries:
            close = difflib.get_close_matches(name, list(self._entries), n=1) if isinstance(name, str) else []
            raise ConfigError(f"{field or self.field} = {name!r}: must be one of {', '.join(map(repr, self._entries))}"
                              + (f" (did you mean {close[0]!r}?)" if close else ""))
        return self._entries[name]

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._entries)})"
