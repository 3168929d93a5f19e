"""A private OpenSSH server on 127.0.0.1 for the remote tests, and the client side's options.

Everything is the test's own: a host key and a user key made by ``ssh-keygen`` in a temporary
directory, an ``authorized_keys`` there (``AuthorizedKeysFile``), a free port, a pid file, and
a client configuration read with ``ssh -F`` (so neither ``~/.ssh/config`` nor
``/etc/ssh/ssh_config`` applies) whose known-hosts file is in the same directory.  The server
runs as the current user, in the foreground (``-D -e``: its log is a file the test can read),
in a session of its own (no controlling tty, so no process under it can be taken for a pane's).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.tmuxtest import poll

HOST = "tlc-remote"  # the Host alias of the client configuration
PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd refuses to start without it


def sshd_binary() -> str | None:
    # /usr/sbin is not on every user's PATH.
    return shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if os.access(p, os.X_OK)), None
    )


def missing() -> str | None:
    """Why a private sshd cannot run here, or None when it can."""
    if sshd_binary() is None:
        return "sshd is not installed (openssh-server)"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (openssh-client)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc's parent pids)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                parents[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        frontier += kids
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def end(pids: list[int], timeout: float = 10.0) -> None:
    """SIGTERM these processes, wait for them to go, SIGKILL what stays."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class Sshd:
    """``sshd -D -e`` on a free port of 127.0.0.1, and ``ssh`` argv that reach it."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tlc-ssh-", dir="/tmp"))
        self.user = getpass.getuser()
        self.log = self.root / "sshd.log"
        self.client_config = self.root / "ssh_config"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        for name in ("host_key", "user_key"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", name],
                cwd=self.root,
                check=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
        shutil.copy(self.root / "user_key.pub", self.root / "authorized_keys")
        (self.root / "home").mkdir()

    def server_config(self) -> str:
        r = self.root
        return "\n".join(
            [
                "ListenAddress 127.0.0.1",
                f"Port {self.port}",
                f"HostKey {r}/host_key",
                f"PidFile {r}/sshd.pid",
                f"AuthorizedKeysFile {r}/authorized_keys",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",  # CI runs as root
                "UsePAM no",
                # The key files are in a /tmp directory: no owner and mode checks on the way.
                "StrictModes no",
                "AllowStreamLocalForwarding yes",
                # A remote socket left by an earlier session is replaced, not refused.
                "StreamLocalBindUnlink yes",
                "PrintMotd no",
                "PrintLastLog no",
                # The remote shell is the user's login shell; its startup files are not the
                # test's (bash run by sshd reads ~/.bashrc, which may wait on anything): HOME
                # is an empty directory of the test's, and ~/.ssh/rc is not run.
                f"SetEnv HOME={r}/home",
                "PermitUserRC no",
                "",
            ]
        )

    def write_client_config(self) -> None:
        r = self.root
        self.client_config.write_text(
            "\n".join(
                [
                    f"Host {HOST}",
                    "  HostName 127.0.0.1",
                    f"  Port {self.port}",
                    f"  User {self.user}",
                    f"  IdentityFile {r}/user_key",
                    "  IdentitiesOnly yes",
                    f"  UserKnownHostsFile {r}/known_hosts",
                    "  StrictHostKeyChecking accept-new",
                    "  BatchMode yes",
                    # The remote socket exists before the remote command runs, or ssh fails.
                    "  ExitOnForwardFailure yes",
                    "  EscapeChar none",
                    "  LogLevel ERROR",
                    "",
                ]
            )
        )

    def start(self) -> Sshd:
        binary = sshd_binary()
        assert binary is not None
        # The privilege separation directory: sshd will not start without it.
        # (Only root can make it; another user's sshd says what it lacks in its log.)
        with contextlib.suppress(PermissionError):
            PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        # A free port can be taken between the probe and sshd's bind: try another.
        for _ in range(5):
            self.port = free_port()
            config = self.root / "sshd_config"
            config.write_text(self.server_config())
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(
                    [binary, "-D", "-e", "-f", str(config)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            poll(
                lambda: (
                    self.proc is not None
                    and (self.proc.poll() is not None or "Server listening on" in self.logs())
                ),
                20.0,
                "sshd to listen",
            )
            if self.proc.poll() is None:
                self.write_client_config()
                return self
            if "Address already in use" not in self.logs():
                break
        raise AssertionError(f"sshd did not start:\n{self.logs()}")

    def logs(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def ssh(self, *options: str) -> list[str]:
        """``ssh -F <config> OPTIONS <host>``; the remote command follows."""
        return ["ssh", "-F", str(self.client_config), *options, HOST]

    def stop(self) -> None:
        """The server and every process under it (a session whose client is gone)."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                end([*children(self.proc.pid), self.proc.pid])
                self.proc.wait(timeout=10)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def running_sshd() -> Iterator[Sshd]:
    server = Sshd()
    try:
        yield server.start()
    finally:
        server.stop()


def master_pid(check_output: str) -> int | None:
    """The pid in ``ssh -O check``'s answer (``Master running (pid=N)``)."""
    m = re.search(r"pid=(\d+)", check_output)
    return int(m.group(1)) if m else None
