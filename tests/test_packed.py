"""Packed records: offsets are the running sums of the declared widths."""

import pytest

from flock3d.core import kernel
from flock3d.core.objects import packing as objects
from flock3d.core.packed import slots


def test_offsets_are_running_sums_of_the_widths_and_the_last_is_the_length():
    assert slots(("a", 1), ("b", 3), ("c", 4)) == (0, 1, 4, 8)
    assert slots() == (0,)


@pytest.mark.parametrize("fields", [(("a", 1), ("a", 2)), (("a", 0),), (("a", 1.5),)])
def test_a_repeated_name_or_a_width_below_one_is_refused(fields):
    with pytest.raises(ValueError):
        slots(*fields)


def test_the_shipped_records_keep_their_layouts():
    # The compiled step and the packed world read these offsets: a change is a change of format.
    header = (objects.KIND, objects.SIDE, objects.POSITION, objects.ROTATION, objects.SIZES,
              objects.MOTION, objects.FIELD, objects.BOUND, objects.HEADER)  # fmt: skip
    assert header == (0, 1, 2, 5, 9, 13, 14, 15, 16)
    staged = (kernel.Q_W, kernel.U_X, kernel.F_X, kernel.S_MIN, kernel.S_MAX, kernel.LIMIT, kernel.P_X,
              kernel.STAGED)  # fmt: skip
    assert staged == (0, 4, 7, 10, 11, 12, 15, 18)
