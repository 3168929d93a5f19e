"""memo.Kept: one answer, for its model version and question only."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core.memo import Kept


def test_an_answer_is_kept_for_its_version_and_question_only() -> None:
    kept: Kept[str] = Kept()
    assert kept.get(0, None) is None  # nothing kept yet, even for the initial values
    kept.put(1, ("own", "q=1"), "answer a")
    assert kept.get(1, ("own", "q=1")) == "answer a"
    assert kept.get(1, ("own", "q=2")) is None  # another question
    assert kept.get(2, ("own", "q=1")) is None  # the model moved: never the old answer
    kept.put(2, ("own", "q=2"), "answer b")
    assert kept.get(1, ("own", "q=1")) is None  # one entry: the last answer only
    assert kept.get(2, ("own", "q=2")) == "answer b"


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans()), max_size=40))
def test_a_kept_answer_is_always_that_of_the_last_put_for_equal_version_and_question(
    steps: list[tuple[int, int, bool]],
) -> None:
    kept: Kept[tuple[int, int]] = Kept()
    last: tuple[int, int] | None = None
    for version, question, put in steps:
        if put:
            kept.put(version, question, (version, question))
            last = (version, question)
        got = kept.get(version, question)
        assert got == (last if last == (version, question) else None)
