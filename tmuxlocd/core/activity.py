"""What a pane is running (spec "Pane activity"): /proc text in, decisions out.

Pure.  The shell (tmuxlocd.daemon.activity_watch) reads ``/proc/<pid>/stat`` and
``/proc/<pid>/cmdline`` of the panes someone watches and hands the text here; this module
says what the pane is running (``command``, as tmux's ``pane_current_command`` would give
it), whether a job holds the terminal (``busy``), what changed, and whether a wait's
condition is met.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

import msgspec

from tmuxlocd.core.location import Location, PaneRef
from tmuxlocd.core.procstat import ProcStat

Until = Literal["idle", "busy", "exit", "change"]
UNTILS: tuple[str, ...] = get_args(Until)
# A wait's timeout_s (spec "Pane activity"): its default, and the most the daemon accepts.
WAIT_DEFAULT_S = 300.0
WAIT_MAX_S = 3600.0
Outcome = Literal["idle", "busy", "exit", "change", "timeout", "gone"]


def window_name(cmd: str) -> str:
    """tmux's ``parse_window_name`` (names.c): what ``pane_current_command`` shows of an
    argv[0] -- no quotes, no leading ``exec``/spaces/dashes (login shells are ``-bash``),
    the first word, trailing non-printables cut, the basename of an absolute path."""
    name = cmd.removeprefix('"')
    name = name.split('"', 1)[0]
    name = name.removeprefix("exec ")
    name = name.lstrip(" -")
    name = name.split(" ", 1)[0]
    while len(name) > 1 and not (name[-1].isalnum() or _ispunct(name[-1])):
        name = name[:-1]
    if name.startswith("/"):
        name = name.rstrip("/").rsplit("/", 1)[-1] or "/"
    return name


def _ispunct(ch: str) -> bool:
    return ch.isascii() and ch.isprintable() and not ch.isalnum() and ch != " "


def command_of(cmdline: bytes | None, comm: str | None) -> str:
    """The command name from a process's cmdline (argv[0], as tmux reads it), falling back
    to its comm when the cmdline is empty (a zombie, a kernel thread) or unreadable."""
    if cmdline:
        argv0 = cmdline.split(b"\0", 1)[0].decode("utf-8", "replace")
        if argv0:
            return window_name(argv0)
    return comm or ""


class Activity(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What one pane is running.  ``busy`` is None when it cannot be known (the pane's
    process is not readable here: another user, another pid namespace)."""

    command: str = ""
    busy: bool | None = None
    dead: bool = False
    exit_status: int | None = None
    exit_signal: int | None = None


UNKNOWN = Activity()


class Reading(msgspec.Struct, frozen=True, kw_only=True):
    """One read of a pane: its activity and the foreground process group (None: the pane's
    own process holds the terminal, or it is unknown), whose end the shell waits for.

    ``pending``: the process in front may be between fork() and the end of its exec(), its
    name not settled (see ``decide``); a watcher reads again a moment later rather than tell
    it."""

    activity: Activity
    foreground: int | None
    pending: bool = False


COMM_LEN = 15  # Linux's TASK_COMM_LEN less its NUL


def decide(
    pane_pid: int,
    pane_stat: ProcStat | None,
    fg_cmdline: bytes | None,
    fg_comm: str | None,
    fg_stat: ProcStat | None = None,
) -> Reading | None:
    """A pane's activity from its process's stat and the cmdline of the group in front.

    ``fg_cmdline``/``fg_comm`` are of the foreground group's leader when busy, of the
    pane's own process otherwise (the caller reads the one ``pane_stat`` names);
    ``fg_stat`` is the leader's record when busy (None where it is not read).

    A command just started passes, in a job-control shell, through three states a read can
    catch (measured with bash in a tmux pane, a loop reading /proc while ``sleep`` starts:
    each seen in most of 150 starts): the shell's fork in front before its exec() (the
    shell's comm, the leader a child of the pane's process); inside exec() with comm renamed
    and the old cmdline; inside exec() with comm renamed and the cmdline empty.  Any of the
    three makes the reading ``pending``, with comm's name where the cmdline is empty.  A real
    subshell, or a script (comm is the script's name, argv[0] its interpreter's), looks the
    same and is told after the watcher's few re-reads: a few ms late, never wrong.

    None: the pane is going away -- its process lost its terminal (tpgid -1: tmux closed
    the pty, as kill-pane does) or is a zombie.  That is no news about its command: what
    follows is the pane's removal or its death, not "idle"."""
    if pane_stat is None:
        return Reading(activity=UNKNOWN, foreground=None)
    if pane_stat.tpgid <= 0 or pane_stat.state in ("Z", "X"):
        return None
    command = command_of(fg_cmdline, fg_comm)
    fg = pane_stat.tpgid
    if fg == pane_pid:
        return Reading(activity=Activity(command=command, busy=False), foreground=None)
    pending = fg_cmdline == b""
    if fg_stat is not None and fg_cmdline:
        renamed = fg_stat.comm != command_of(fg_cmdline, None)[:COMM_LEN]
        unexeced = fg_stat.ppid == pane_pid and fg_stat.comm == pane_stat.comm
        pending = renamed or unexeced
    return Reading(activity=Activity(command=command, busy=True), foreground=fg, pending=pending)


def foreground_pid(pane_pid: int, pane_stat: ProcStat | None) -> int:
    """Whose cmdline names the command: the foreground group's leader, else the pane's."""
    if pane_stat is None or pane_stat.tpgid <= 0:
        return pane_pid
    return pane_stat.tpgid


def dead_activity(before: Activity, status: int | None, signal: int | None) -> Activity:
    """A pane whose process ended (remain-on-exit): nothing is in front any more."""
    return Activity(
        command=before.command, busy=False, dead=True, exit_status=status, exit_signal=signal
    )


def parse_dead(text: str) -> tuple[bool, int | None, int | None] | None:
    """tmux's ``#{pane_dead} #{pane_dead_status} #{pane_dead_signal}`` (3.2 has no
    pane_dead_signal: it expands empty) -> (dead, status, signal); None if malformed."""
    parts = text.strip().split(" ")
    if not parts or parts[0] not in ("0", "1"):
        return None
    values: list[int | None] = []
    for part in [*parts, "", ""][1:3]:
        if part == "":
            values.append(None)
        elif part.lstrip("-").isdigit():
            values.append(int(part))
        else:
            return None
    return parts[0] == "1", values[0], values[1]


def changed(before: Activity, after: Activity) -> tuple[str, ...]:
    """The fields that differ, as ``pane.<field>`` (the names a Location would use)."""
    return tuple(
        f"pane.{name}"
        for name in before.__struct_fields__
        if getattr(before, name) != getattr(after, name)
    )


def outcome(until: Until, before: Activity, now: Activity) -> Outcome | None:
    """Whether a wait for ``until`` (begun at ``before``) is over at ``now``, and how.

    A pane whose process ended is over for every condition: ``exit`` (met for exit, idle
    and change; for busy it never will be)."""
    if now.dead:
        return "exit"
    match until:
        case "idle":
            return "idle" if now.busy is False else None
        case "busy":
            return "busy" if now.busy is True else None
        case "change":
            return "change" if changed(before, now) else None
        case _:
            return None


def met(until: Until, result: Outcome) -> bool:
    """Whether an outcome is what the wait asked for."""
    if result == until:
        return True
    return result == "exit" and until in ("idle", "change")


# ---------------------------------------------------------------------------------------------
# Exited or killed?  With remain-on-exit off a pane whose process ended goes at once, and on
# the daemon's side an exit and a kill-pane look the same: the process ends (its pidfd fires)
# and some 3-5 ms later tmux reports the pane's removal, in that order both times (measured on
# 3.3a and 3.6b).  tmux itself knows: it runs ``pane-exited`` only when the pane's programs
# ended (server_destroy_pane), never for kill-pane/kill-window/kill-server.  So while panes of
# a server are watched, a hook there appends the pane's id to a global user option, which the
# watcher reads when a watched pane is removed.  No exit status: the hook runs after the pane
# is gone, when its formats name another pane.

EXITED_HOOK = "pane-exited"
EXITED_OPTION = "@tmuxlocd_exited"
EXITED_KEEP = 240  # characters of the option kept (the hook trims it): ids of recent exits
Argv = tuple[str, ...]


def exited_hook_install(word: Callable[[str], str], index: int) -> list[Argv]:
    """Install the hook (at ``index`` of pane-exited's array: a user's hooks stay) and start
    from an empty list.  The hook's own command is parsed when it runs, hence ``word``
    (the command-alias bypass) for its command name."""
    kept = f"#{{={-EXITED_KEEP}:{EXITED_OPTION}}}"  # the value's last EXITED_KEEP chars
    text = f"{word('set-option')} -gF {EXITED_OPTION} '{kept} #{{hook_pane}}'"
    return [
        ("set-option", "-g", EXITED_OPTION, ""),
        ("set-hook", "-g", f"{EXITED_HOOK}[{index}]", text),
    ]


def exited_hook_remove(index: int) -> list[Argv]:
    return [("set-hook", "-gu", f"{EXITED_HOOK}[{index}]"), ("set-option", "-gu", EXITED_OPTION)]


def exited_read() -> Argv:
    return ("display-message", "-p", f"#{{{EXITED_OPTION}}}")


def parse_exited(text: str) -> set[str]:
    """The pane ids in the option's value.  The hook trims the value from the left, so the
    first word may be the tail of an id (no ``%``): it is dropped."""
    return {w for w in text.split() if w.startswith("%") and w[1:].isdigit()}


def exited_activity(before: Activity) -> Activity:
    """A pane whose process exited by itself and that tmux removed (remain-on-exit off):
    dead, its status unknown."""
    return Activity(command=before.command, busy=False, dead=True)


def pane_with(pane: PaneRef, act: Activity) -> PaneRef:
    # tmux's own word on a dead pane's end (the Location, from its rows) stands when the
    # activity has none (a pane found dead rather than seen dying).
    status, sig = act.exit_status, act.exit_signal
    if status is None and sig is None and pane.dead:
        status, sig = pane.exit_status, pane.exit_signal
    return msgspec.structs.replace(
        pane,
        command=act.command,
        busy=act.busy,
        dead=act.dead or pane.dead,
        exit_status=status,
        exit_signal=sig,
    )


def with_activity(loc: Location, act: Activity) -> Location:
    """The Location with the pane's activity filled in (answers about activity only)."""
    return msgspec.structs.replace(loc, pane=pane_with(loc.pane, act))
