# SPDX-License-Identifier: GPL-2.0-only
"""The matrix's slots: guests get their full-speed turn in the order they joined, one per slot
freed, and a guest that ends while waiting gives up its place."""

from kernels.matrix.slots import Slots


def test_turns_follow_the_order_of_joining_one_per_freed_slot() -> None:
    slots = Slots(2)
    a, b, c, d = (slots.join(name) for name in "abcd")
    assert [t.opened() for t in (a, b, c, d)] == [True, True, False, False]
    b.done()
    assert (c.opened(), d.opened()) == (True, False)
    a.done()
    assert d.opened()
    assert c.opened()  # stays open


def test_a_later_guest_never_overtakes_a_waiting_one() -> None:
    slots = Slots(1)
    a, b, c = (slots.join(name) for name in "abc")
    a.done()
    assert not c.opened()  # polled first, but b is first in line
    assert b.opened()


def test_a_guest_ending_while_it_waits_leaves_the_line() -> None:
    slots = Slots(1)
    a, b, c = (slots.join(name) for name in "abc")
    b.done()  # crashed while booting ahead: it never held the slot
    assert not c.opened()
    a.done()
    assert c.opened()
