"""Command spellings that no command alias takes over (tmux's cmd_find rules)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core import spelling
from tmuxlocd.core.spelling import COMMAND_NAMES, SHORT, USED, choose, parse_alias_names, spellings


def resolves(word: str) -> str | None:
    """What tmux's cmd_find makes of ``word`` (ignoring aliases): the command, or None."""
    for name, short in SHORT.items():
        if word == short:
            return name
    found = [name for name in COMMAND_NAMES if name.startswith(word)]
    if word in COMMAND_NAMES:
        return word
    return found[0] if len(found) == 1 else None


def test_every_spelling_resolves_to_its_command_alone() -> None:
    for name in USED:
        words = spellings(name)
        assert words[0] == name
        assert len(set(words)) == len(words)
        for word in words:
            assert resolves(word) == name, (name, word)


def test_the_prefix_stops_where_it_would_become_ambiguous() -> None:
    assert spellings("list-panes")[-1] == "list-p"  # list- is list-sessions too
    assert "display-me" not in spellings("display-message")  # display-menu
    assert spellings("show-options")[1] == "show"


def test_no_alias_keeps_every_full_name() -> None:
    chosen = choose([])
    assert all(chosen.word(name) == name for name in USED)
    assert chosen.shadowed == () and chosen.blocked == () and chosen.describe() == ""
    assert chosen.chosen == spelling.PLAIN.chosen


def test_a_shadowed_name_is_sent_under_the_next_spelling() -> None:
    chosen = choose(["list-panes", "lsp", "split-pane"])
    assert chosen(("list-panes", "-a", "-F", "#{pane_id}")) == (
        "list-pane",
        "-a",
        "-F",
        "#{pane_id}",
    )
    assert chosen.shadowed == ("list-panes",)
    assert "list-panes (sent as list-pane)" in chosen.describe()
    assert chosen(()) == ()
    assert chosen(("kill-server",)) == ("kill-server",)  # not ours: untouched


def test_every_spelling_shadowed_is_blocked_and_said() -> None:
    chosen = choose(spellings("wait-for"))
    assert chosen.blocked == ("wait-for",)
    assert "command-alias shadows every spelling of wait-for" in chosen.describe()


@given(st.sets(st.sampled_from(sorted({w for n in USED for w in spellings(n)}))))
def test_the_chosen_spelling_is_never_an_alias(aliases: set[str]) -> None:
    chosen = choose(aliases)
    for name in USED:
        word = chosen.word(name)
        if name in chosen.blocked:
            assert set(spellings(name)) <= aliases
        else:
            assert word not in aliases and resolves(word) == name


def test_alias_lists_as_tmux_prints_them() -> None:
    # show-options -sv command-alias on 3.3a, default aliases plus one of the user's
    lines = [
        "split-pane=split-window",
        "splitp=split-window",
        "server-info=show-messages -JT",
        "info=show-messages -JT",
        "choose-window=choose-tree -w",
        "choose-session=choose-tree -s",
        "list-panes=display-message -p hijacked",
    ]
    assert parse_alias_names(lines) == frozenset(
        {
            "split-pane",
            "splitp",
            "server-info",
            "info",
            "choose-window",
            "choose-session",
            "list-panes",
        }
    )
    assert parse_alias_names([]) == frozenset()
    assert parse_alias_names([""]) == frozenset()


def test_an_answer_that_is_no_alias_list_is_not_believed() -> None:
    assert parse_alias_names(["hijacked"]) is None
    assert parse_alias_names(["=value"]) is None
    assert parse_alias_names(["two words=x"]) is None
