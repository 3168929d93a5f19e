"""memo.Memo: answers kept for one model version only."""

from __future__ import annotations

from tmuxlocd.memo import Memo


def test_an_answer_is_kept_for_its_version_only() -> None:
    memo: Memo[str] = Memo(size=2)
    memo.put(1, "a", "answer a")
    assert memo.get(1, "a") == "answer a"
    assert memo.get(1, "b") is None
    assert memo.get(2, "a") is None  # the model moved: never the old answer
    memo.put(2, "b", "answer b")
    assert memo.get(1, "a") is None and memo.get(2, "a") is None and len(memo) == 1
    assert memo.get(2, "b") == "answer b"


def test_the_memo_is_bounded() -> None:
    memo: Memo[int] = Memo(size=2)
    for n in range(5):
        memo.put(7, n, n)
        assert len(memo) <= 2
    assert memo.get(7, 4) == 4
