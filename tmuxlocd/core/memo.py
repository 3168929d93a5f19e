"""One connection's last answer to a question about an unchanged model.

Pure.  An agent asks ``GET /v1/self`` every turn, a keep-alive client many times a second,
and between two changes of tmux the answer for one caller is the same bytes every time.  The
answer is kept with the model's version it was made from and the question it answered (the
caller's identity facts, read anew for every request, and the request's own words), and it is
served again only while both are equal: never for a version it was not made from.  One entry
per connection: a connection has one caller, who asks one question again and again.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Kept(Generic[T]):
    __slots__ = ("_answer", "_question", "_version")

    def __init__(self) -> None:
        self._version: int | None = None
        self._question: object = None
        self._answer: T | None = None

    def get(self, version: int, question: object) -> T | None:
        # ``==`` on tuples compares identical items by identity first: a question made of the
        # objects the last one was made of costs a few pointer comparisons.
        if version != self._version or question != self._question:
            return None
        return self._answer

    def put(self, version: int, question: object, answer: T) -> None:
        self._version, self._question, self._answer = version, question, answer
