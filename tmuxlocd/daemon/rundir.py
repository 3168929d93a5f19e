"""The daemon's runtime directory, where its socket and token live: made 0700, and refused
when another user owns it or others may write to it (SPEC §6).

Apart from the daemon's lifecycle (tmuxlocd.daemon.serve) so that ``tmuxlocd token`` checks
the directory without loading aiohttp.
"""

from __future__ import annotations

import os
import stat


class Refused(Exception):
    """The daemon cannot start; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def check_directory(directory: str) -> None:
    """Create ``directory`` 0700 if missing; refuse one another user owns or others can write."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.stat(directory)
    except OSError as exc:
        raise Refused(f"cannot use socket directory {directory}: {exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise Refused(f"{directory} is not a directory")
    if st.st_uid != os.getuid():
        raise Refused(f"socket directory {directory} is owned by uid {st.st_uid}, not by us")
    if st.st_mode & 0o022:
        raise Refused(
            f"socket directory {directory} is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); chmod go-w it or choose another"
        )
