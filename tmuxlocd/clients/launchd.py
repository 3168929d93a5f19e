"""``tmuxlocd install launchd``: the daemon as a macOS LaunchAgent, started by its socket.

A LaunchAgent is a plist in ``~/Library/LaunchAgents``.  Unlike a systemd unit it cannot say
``%h`` or ``$HOME``: every path is written out at install time, and so is ``PATH`` (launchd
gives an agent ``/usr/bin:/bin:/usr/sbin:/sbin``, where neither Homebrew's tmux nor the
harnesses are).  launchd holds the listening socket (``Sockets``, handed over by
``launch_activate_socket``: tmuxlocd.host.darwin) and starts the daemon on the first client;
``KeepAlive`` (``SuccessfulExit`` false) starts it again after a failure, as the systemd unit's
``Restart=on-failure``; ``ProcessType`` ``Interactive`` keeps it out of launchd's throttling
of background jobs (the daemon answers a user's hooks while they wait).

Written as a plain file plan, tested on Linux; what launchd does
with the plist is checked on a Mac (docs/macos.md).
"""

from __future__ import annotations

import difflib
import os
import plistlib
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

LABEL = "tmuxlocd"
PLIST = f"{LABEL}.plist"
SOCKETS_KEY = "Listeners"  # the name the daemon asks launch_activate_socket for


def agents_dir(home: Path) -> Path:
    return home / "Library" / "LaunchAgents"


def agent_path(env: Mapping[str, str], exe: Sequence[str]) -> str:
    """The PATH written into the agent: the installing shell's, with the directories of tmux
    and of this tmuxlocd first, and the system's last (launchd expands nothing)."""
    dirs: list[str] = []
    tmux = shutil.which("tmux", path=env.get("PATH"))
    for found in (tmux, exe[0]):
        if found:
            dirs.append(os.path.dirname(os.path.abspath(found)))
    dirs += [d for d in env.get("PATH", "").split(os.pathsep) if d]
    dirs += ["/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
    return os.pathsep.join(dict.fromkeys(d for d in dirs if os.path.isabs(d)))


def plist_text(*, exe: Sequence[str], socket: str, log: str, path: str) -> str:
    """The LaunchAgent (launchd.plist(5)) that runs ``exe serve`` on ``socket``."""
    agent = {
        "Label": LABEL,
        "ProgramArguments": [*exe, "serve"],
        "EnvironmentVariables": {"PATH": path},
        "Sockets": {SOCKETS_KEY: {"SockPathName": socket, "SockPathMode": 0o600}},
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Interactive",
        "ExitTimeOut": 5,
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }
    return plistlib.dumps(agent, sort_keys=False).decode()


def is_ours(text: str) -> bool:
    """Whether a plist is a tmuxlocd agent (its Label), whatever PATH it was written with."""
    try:
        data = plistlib.loads(text.encode())
    except (plistlib.InvalidFileException, ValueError):
        return False
    return isinstance(data, dict) and data.get("Label") == LABEL


def run_launchd(
    *,
    exe: Sequence[str],
    socket: str,
    home: Path,
    env: Mapping[str, str],
    dry_run: bool = False,
    remove: bool = False,
    out: Callable[[str], None] = print,
) -> int:
    target = agents_dir(home) / PLIST
    try:
        now = target.read_text("utf-8")
    except FileNotFoundError:
        now = ""
    except OSError as exc:
        out(f"tmuxlocd: cannot read {target}: {exc}")
        return 1
    log = str(home / "Library" / "Logs" / "tmuxlocd.log")
    ours = plist_text(exe=exe, socket=socket, log=log, path=agent_path(env, exe))
    uid = os.getuid()
    if now and not is_ours(now):
        out(f"tmuxlocd: {target} is not a tmuxlocd agent (its Label); left untouched")
        return 1
    after = "" if remove else ours
    changed = now != after
    if not changed:
        out(f"unchanged: {target}" if now else f"not installed: {target}")
    elif dry_run:
        lines = difflib.unified_diff(
            now.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"{target} (now)",
            tofile=f"{target} (after)",
        )
        out("".join(lines).rstrip("\n"))
    elif remove:
        target.unlink()
        out(f"removed: {target}")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        # launchd makes the socket; its directory is made here as the daemon makes its own
        # (0700), which the daemon's directory checks would ask of it.
        os.makedirs(os.path.dirname(socket), mode=0o700, exist_ok=True)
        os.makedirs(os.path.dirname(log), exist_ok=True)
        target.write_text(ours, "utf-8")
        out(f"written: {target}")
    if dry_run:
        out("(dry run: nothing written)")
    elif remove:
        out(f"next: launchctl bootout gui/{uid}/{LABEL}  (before or after: it stops the agent)")
    else:
        if now and changed:
            out(f"next: launchctl bootout gui/{uid}/{LABEL}  (the old agent first)")
        out(f"next: launchctl bootstrap gui/{uid} {target}")
        out(f"next: tmuxlocd doctor --host  (checks what this Mac's kernel says; log: {log})")
    return 0
