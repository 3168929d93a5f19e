"""The last answers to equal questions about an unchanged model.

Pure.  An agent asks ``GET /v1/self`` every turn, and between two changes of tmux the answer
for one caller is the same bytes every time: they are kept by the question (the caller's
identity facts and the query) and let go, all of them, as soon as the model's version moves.
An answer is never served for a version it was not made from.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T")

MEMO_SIZE = 256  # distinct questions kept per model version (one or a few per agent)


class Memo(Generic[T]):
    def __init__(self, size: int = MEMO_SIZE) -> None:
        self.size = size
        self._version: int | None = None
        self._answers: dict[Hashable, T] = {}

    def get(self, version: int, key: Hashable) -> T | None:
        if version != self._version:
            return None
        return self._answers.get(key)

    def put(self, version: int, key: Hashable, value: T) -> None:
        if version != self._version or len(self._answers) >= self.size:
            self._answers.clear()
            self._version = version
        self._answers[key] = value

    def __len__(self) -> int:
        return len(self._answers)
