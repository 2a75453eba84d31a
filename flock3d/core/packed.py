"""Packed records declared by their fields' names and widths, their offsets computed.

A packed record (an object's header in the world's array, a batch's staged rows) is read by
compiled code at fixed offsets. Declaring the widths and computing the offsets keeps a field
added or widened from shifting the others by hand::

    KIND, POSITION, ROTATION, SIZE = slots(("kind", 1), ("position", 3), ("rotation", 4))

Invariant: offsets are consecutive sums of the widths, from 0; the last value is the record's
length.
"""

from __future__ import annotations

__all__ = ["slots"]


def slots(*fields: tuple[str, int]) -> tuple[int, ...]:
    """The offset of each field of a packed record, in order, then the record's length.

    Args:
        fields: (name, width) pairs; names document the record and must be distinct, widths >= 1.

    Raises:
        ValueError: a repeated name or a width below 1.
    """
    names = [name for name, _ in fields]
    if len(set(names)) != len(names):
        raise ValueError(f"a packed record names a field twice: {names}")
    offsets, at = [], 0
    for name, width in fields:
        if int(width) != width or width < 1:
            raise ValueError(f"field {name!r} of a packed record has width {width!r}; it must be >= 1")
        offsets.append(at)
        at += int(width)
    return (*offsets, at)
