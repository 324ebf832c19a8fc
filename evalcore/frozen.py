"""Copies that share what never changes.

A session copies its sampler at every checkpoint, for every new tab and before an undo. At
10^6 items a plain ``copy.deepcopy`` spent most of its time on two things that need no copy:
the O(N) arrays built once (the items' cells, codes, logits), and the elements of the draw
lists, visited one by one although numbers are immutable (20-300 ms per copy, depending on
the machine's load). Objects that derive from ``SharesFrozenArrays`` share their read-only
arrays (``frozen``) with their copies and copy lists of numbers with ``list``.
"""

from __future__ import annotations

import copy

import numpy as np

__all__ = ["SharesFrozenArrays", "frozen"]

_NUMBERS = frozenset({int, float, bool, np.int64, np.int32, np.float64, np.bool_})


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``, for a structure built once and shared by every copy of
    its owner (a write through it raises instead of changing every copy; the array itself
    stays as writable as it was)."""
    view = array.view()
    view.flags.writeable = False
    return view


class SharesFrozenArrays:
    """``copy.deepcopy`` of this object shares its read-only numpy arrays, copies lists whose
    elements are all numbers (immutable) shallowly, and deep-copies every other attribute."""

    def __deepcopy__(self, memo):
        twin = object.__new__(type(self))
        memo[id(self)] = twin
        for name, value in vars(self).items():
            if isinstance(value, np.ndarray) and not value.flags.writeable:
                shared = value
            elif type(value) is list and all(type(v) in _NUMBERS for v in value):
                shared = list(value)
            else:
                shared = copy.deepcopy(value, memo)
            setattr(twin, name, shared)
        return twin
