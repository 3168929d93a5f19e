"""The hook waiter's command line (tmux 3.3): built from the mirror's facts, no tmux run."""

from __future__ import annotations

from tmuxlocd.core import spelling
from tmuxlocd.core.attach import ALIVE, WAITER_CHAIN, WAITER_MARK, channel, waiter_argv
from tmuxlocd.core.mirror import LAYOUTS_OPTION


def test_the_waiter_is_a_utf8_client_serving_a_chain_of_rounds() -> None:
    argv = waiter_argv("tmux", "/nonexistent/sock", spelling.PLAIN, channel(42), "client-4242")
    # Without -u a client of the waiter's cut environment gets "_" for every TAB; -N: it
    # never starts a server.
    assert argv[:5] == ["tmux", "-N", "-u", "-S", "/nonexistent/sock"]
    assert argv.count("wait-for") == WAITER_CHAIN
    assert argv.count(ALIVE) == WAITER_CHAIN
    # Each round: wait, check our control client is there, print the mark and the rows the
    # hooks left, clear them.
    assert argv[5:21] == [
        "wait-for", "tmuxlocd-42", ";",
        "refresh-client", "-t", "client-4242", "-B", ALIVE, ";",
        "display-message", "-p", f"{WAITER_MARK}#{{{LAYOUTS_OPTION}}}", ";",
        "set-option", "-su", LAYOUTS_OPTION,
    ]  # fmt: skip
    assert argv[21] == ";" and len(argv) == 5 + 17 * WAITER_CHAIN - 1
    # tmux takes a client's command in one message of at most 16 KiB.
    assert sum(len(a) + 1 for a in argv[5:]) < 12_000


def test_the_waiter_respells_its_commands() -> None:
    spell = spelling.choose(["wait-for", "set-option"])
    argv = waiter_argv("tmux", "/nonexistent/sock", spell, channel(42), "client-4242")
    assert "wait-for" not in argv and "set-option" not in argv
