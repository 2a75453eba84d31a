"""The outcome of a step, as every engine reports it: declared once, for the fast engine's
compiled step, the reference engine and the messages :mod:`flock3d.flock` builds from them.

``OK``: the step was carried out. ``NOT_FINITE``: a boid's state became non-finite or absurdly
large. ``RULE_RAISED``, ``RULE_NOT_FINITE``, ``RULE_SHAPE``: a user's rule or force raised,
returned a non-finite value, or returned something not of 3 numbers.
"""

from __future__ import annotations

__all__ = ["OK", "NOT_FINITE", "RULE_RAISED", "RULE_NOT_FINITE", "RULE_SHAPE"]

OK, NOT_FINITE, RULE_RAISED, RULE_NOT_FINITE, RULE_SHAPE = range(5)
