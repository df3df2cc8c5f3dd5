"""`up`'s rollback with plain undo steps (no root needed): every step runs, the error that stopped
`up` stays the error, and a rollback that failed says which command removes the rest."""

from __future__ import annotations

import pytest

from testbed import errors, lifecycle


def test_every_undo_step_runs_and_the_original_error_leads():
    ran = []

    def failing(what: str):
        def step():
            ran.append(what)
            raise errors.TestbedError(f"{what} could not be removed")

        return step

    undo = [
        lambda: ran.append("state"),
        failing("namespace tb-l0"),
        lambda: ran.append("namespace tb-m0"),
        failing("blkio group tb-m0"),
    ]
    original = errors.TestbedError("tc: adding tbf on tb-l0 failed")
    with pytest.raises(errors.TestbedError) as raised:
        lifecycle.rollback(undo, original, "tb-1a2b")
    assert ran == ["blkio group tb-m0", "namespace tb-m0", "namespace tb-l0", "state"]
    assert raised.value.__cause__ is original
    assert str(raised.value) == (
        "tc: adding tbf on tb-l0 failed; rolling back failed too: blkio group tb-m0 could "
        "not be removed; namespace tb-l0 could not be removed. Run `testbed down "
        "--name tb-1a2b` to remove what is left"
    )


def test_an_interrupted_up_whose_rollback_failed_still_says_so():
    def failing():
        raise OSError()

    with pytest.raises(errors.TestbedError, match=r"^KeyboardInterrupt; rolling back failed too: OSError\. Run "):
        lifecycle.rollback([failing], KeyboardInterrupt(), "tb-1a2b")


def test_a_clean_rollback_leaves_the_error_to_the_caller():
    ran = []
    assert lifecycle.rollback([lambda: ran.append(1), lambda: ran.append(2)], ValueError("x"), "tb-1a2b") is None
    assert ran == [2, 1]
