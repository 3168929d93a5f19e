"""Spell tmux commands so that a user's ``command-alias`` cannot take them over.

tmux expands a command alias when the first word of a command equals an alias name exactly
(``cmd_get_alias`` in cmd.c, called from ``cmd_parse_expand_alias``); there is no flag or
quoting that turns this off for a command a client sends.  But the command table
(``cmd_find``) accepts more than one spelling of every command: its full name, its short
alias (``lsp`` for ``list-panes``) and every unambiguous prefix (``list-pan``).  An alias
shadows one spelling only, so the daemon reads the alias names once per attachment and sends
each command under the first spelling no alias claims.  Only when a user aliased every
spelling is the command unusable; that is reported, never guessed around.

Pure: the alias names come in (``parse_alias_names`` on the lines of
``show-options -sv command-alias``), spellings go out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# Every command name of tmux 3.2a to 3.6b (the union of their command tables).  A prefix
# counts as unambiguous only when no other name here starts with it, whichever version runs.
_NAMES = """
    attach-session bind-key break-pane capture-pane choose-buffer choose-client choose-tree
    clear-history clear-prompt-history clock-mode command-prompt confirm-before copy-mode
    customize-mode delete-buffer detach-client display-menu display-message display-panes
    display-popup find-window has-session if-shell join-pane kill-pane kill-server kill-session
    kill-window last-pane last-window link-window list-buffers list-clients list-commands
    list-keys list-panes list-sessions list-windows load-buffer lock-client lock-server
    lock-session move-pane move-window new-session new-window next-layout next-window
    paste-buffer pipe-pane previous-layout previous-window refresh-client rename-session
    rename-window resize-pane resize-window respawn-pane respawn-window rotate-window run-shell
    save-buffer select-layout select-pane select-window send-keys send-prefix server-access
    set-buffer set-environment set-hook set-option set-window-option show-buffer
    show-environment show-hooks show-messages show-options show-prompt-history
    show-window-options source-file split-window start-server suspend-client swap-pane
    swap-window switch-client unbind-key unlink-window wait-for
"""
COMMAND_NAMES = frozenset(_NAMES.split())

# The short aliases tmux itself gives the commands the daemon sends (cmd_entry.alias).
SHORT = {
    "attach-session": "attach",
    "display-message": "display",
    "if-shell": "if",
    "list-panes": "lsp",
    "list-sessions": "ls",
    "list-windows": "lsw",
    "refresh-client": "refresh",
    "set-option": "set",
    "show-options": "show",
    "wait-for": "wait",
}

# What the daemon sends: the observer, its waiter, its hooks and the direct path.
USED = (
    "attach-session",
    "display-message",
    "if-shell",
    "list-clients",
    "list-panes",
    "list-sessions",
    "list-windows",
    "refresh-client",
    "select-pane",
    "select-window",
    "set-hook",
    "set-option",
    "show-options",
    "switch-client",
    "wait-for",
)


def spellings(name: str) -> tuple[str, ...]:
    """Every spelling tmux resolves to ``name``, most readable first."""
    out = [name]
    if name in SHORT:
        out.append(SHORT[name])
    others = [n for n in COMMAND_NAMES if n != name]
    for end in range(len(name) - 1, 0, -1):
        prefix = name[:end]
        if any(n.startswith(prefix) for n in others) or prefix in SHORT.values():
            break
        out.append(prefix)
    return tuple(out)


def parse_alias_names(lines: Iterable[str]) -> frozenset[str] | None:
    """The alias names in ``show-options -sv command-alias`` output, or None when the lines
    are not such output (the reading command was itself taken over, say)."""
    names: set[str] = set()
    for line in lines:
        if not line:
            continue
        name, sep, _ = line.partition("=")
        if not sep or not name or any(ch.isspace() for ch in name):
            return None
        names.add(name)
    return frozenset(names)


@dataclass(frozen=True)
class Spelling:
    """The spelling chosen for each command, and what the aliases took."""

    chosen: dict[str, str] = field(default_factory=dict)
    # command -> its full name was an alias (we use another spelling)
    shadowed: tuple[str, ...] = ()
    # commands every spelling of which is an alias: they cannot be sent
    blocked: tuple[str, ...] = ()

    def __call__(self, argv: Sequence[str]) -> tuple[str, ...]:
        """``argv`` with its command word respelled."""
        if not argv:
            return tuple(argv)
        return (self.chosen.get(argv[0], argv[0]), *argv[1:])

    def word(self, name: str) -> str:
        return self.chosen.get(name, name)

    def describe(self) -> str:
        parts = []
        if self.blocked:
            parts.append("command-alias shadows every spelling of " + ", ".join(self.blocked))
        if self.shadowed:
            parts.append(
                "command-alias shadows "
                + ", ".join(f"{c} (sent as {self.chosen[c]})" for c in self.shadowed)
            )
        return "; ".join(parts)


PLAIN = Spelling(chosen={name: name for name in USED})


def choose(aliases: Iterable[str], commands: Iterable[str] = USED) -> Spelling:
    taken = frozenset(aliases)
    chosen: dict[str, str] = {}
    shadowed: list[str] = []
    blocked: list[str] = []
    for name in commands:
        free = [s for s in spellings(name) if s not in taken]
        if not free:
            blocked.append(name)
            chosen[name] = name
            continue
        chosen[name] = free[0]
        if free[0] != name:
            shadowed.append(name)
    return Spelling(chosen=chosen, shadowed=tuple(shadowed), blocked=tuple(blocked))
