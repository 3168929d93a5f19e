"""The bearer token of the TCP listeners (SPEC §6), kept across restarts.

The token lives in the file ``token`` beside the daemon's first Unix socket, mode 0600.  It
is made once, the first time a daemon with a TCP listener starts (or ``tmuxlocd token`` asks
for it), and stays the same across restarts, so that a client holding it (an SSE client
resuming with ``Last-Event-ID`` after the daemon restarted) is still let in.  It changes only
when asked (``tmuxlocd token --rotate``); a running daemon takes a rotated token from the
next request on.  A file that is not a regular file of ours with mode 0600, or does not hold
a token, is never trusted: a new token replaces it.

Standard library only.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat

log = logging.getLogger(__name__)

TOKEN_FILE = "token"
MIN_LENGTH = 32
_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def token_path(directory: str) -> str:
    return os.path.join(directory, TOKEN_FILE)


def _valid(token: str) -> bool:
    return len(token) >= MIN_LENGTH and set(token) <= _ALPHABET


def read_token(path: str) -> str | None:
    """The token in ``path``, or None if there is none we can trust (missing, a symlink,
    not a regular file, another owner, readable or writable by others, not a token)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.getuid()
            or st.st_mode & 0o077
            or st.st_size > 4096
        ):
            return None
        token = os.read(fd, 4096).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    return token if _valid(token) else None


def write_new_token(directory: str) -> str:
    """A fresh token, written to ``directory``/token (0600) in one rename: a reader sees the
    old token or the new one, never a part."""
    token = secrets.token_urlsafe(32)
    path = token_path(directory)
    tmp = os.path.join(directory, f".{TOKEN_FILE}.{secrets.token_hex(6)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, token.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return token


def load_or_make(directory: str) -> tuple[str, bool]:
    """The token of ``directory`` and whether it was made now (none, or none to trust)."""
    path = token_path(directory)
    token = read_token(path)
    if token is not None:
        return token, False
    if os.path.lexists(path):
        log.warning(
            "replacing a token file that cannot be trusted (not ours, not 0600, or not a token)",
            extra={"token_path": path},
        )
    return write_new_token(directory), True


class TokenFile:
    """The token a running daemon checks: the file's, re-read when the file changes (one
    ``stat`` per TCP request).  If the file goes away or stops being trustworthy, the last
    good token stays in force (and a warning is logged once)."""

    def __init__(self, directory: str) -> None:
        self.path = token_path(directory)
        self.token, self.made = load_or_make(directory)
        self._seen = self._identity()
        self._warned = False

    def _identity(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)

    def current(self) -> str:
        seen = self._identity()
        if seen != self._seen:
            self._seen = seen
            token = read_token(self.path)
            if token is not None:
                if token != self.token:
                    log.info("the TCP token was rotated", extra={"token_path": self.path})
                self.token = token
                self._warned = False
            elif not self._warned:
                self._warned = True
                log.warning(
                    "the token file is gone or cannot be trusted; the last token stays in force",
                    extra={"token_path": self.path},
                )
        return self.token
