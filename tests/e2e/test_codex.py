"""Codex (the real ``@openai/codex``, pinned) in panes of a private tmux server, against a
Responses API stub (``stub_responses``): what reaches the model.

Codex is configured in a throwaway HOME as a user would: ``tmuxlocd install codex`` writes
the hooks and the MCP server; a ``[model_providers.stub]`` entry points Codex at the stub.
Codex runs no hook it has not been got to trust, silently (``codex exec`` never asks), and
``tmuxlocd`` never records that trust itself: here the test takes the user's decision and
records it where ``/hooks`` would (``[hooks.state."<key>"] trusted_hash``), then checks that
``tmuxlocd doctor codex`` calls the hooks trusted.

The interactive TUI of current Codex runs every session in one shared ``codex app-server``
that the first TUI starts detached (``[features] daemon_auto_start``, on by default); its
hooks and MCP servers are that server's children, with the first TUI's ``TMUX_PANE``.  The
two-TUI tests drive two real TUIs with ``tmux send-keys`` and assert that each pane's model is
got its own pane or nothing, never the other's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import statistics
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import npmcache
from tests.e2e.panes import HarnessRig, Run, process_ended, report
from tests.e2e.stub_base import (
    Block,
    Decide,
    Recorded,
    Text,
    ToolCall,
    Turn,
    always_text,
    location_blocks,
    location_bytes,
    mcp_names_pane,
    new_blocks,
)
from tests.e2e.stub_responses import (
    SHELL_TOOL,
    ResponsesStub,
    input_items,
    tool_names,
    tool_results,
    user_texts,
)
from tests.tmuxtest import poll
from tmuxlocd.clients import doctor
from tmuxlocd.core.caller import serves_sessions
from tmuxlocd.core.harnesses import codex

PACKAGE = "@openai/codex"
VERSION = "0.171.0"
KEY_VAR = "TMUXLOCD_STUB_API_KEY"  # the provider's env_key: Codex sends it as a bearer token
SESSION_ID = re.compile(r"^session id: ([0-9a-f-]{36})$", re.MULTILINE)


def codex_binary() -> Path:
    """The native binary of the pinned package (the npm wrapper only finds and runs it)."""
    prefix = npmcache.ensure(PACKAGE, VERSION)
    found = sorted(prefix.glob("node_modules/@openai/codex-*/vendor/*/bin/codex"))
    if not found:
        pytest.skip(f"{PACKAGE}@{VERSION}: no native binary for this platform under {prefix}")
    return found[0]


def trust_hooks(codex_home: Path) -> None:
    """Records trust for our hooks in ``$CODEX_HOME/config.toml`` as Codex's ``/hooks`` does
    (``t``): the key and hash that ``tmuxlocd doctor`` checks.  The user's decision, taken by
    the test in its throwaway HOME."""
    hooks_json = codex_home / "hooks.json"
    data = json.loads(hooks_json.read_text())
    lines: list[str] = []
    for hook in doctor.our_hooks(data):
        key = codex.hook_key(str(hooks_json), hook.event, hook.group, hook.index)
        digest = codex.hook_hash(hook.event, hook.matcher, hook.entry)
        assert digest is not None, hook
        lines += [f"[hooks.state.{json.dumps(key)}]", f"trusted_hash = {json.dumps(digest)}", ""]
    with open(codex_home / "config.toml", "a") as f:
        f.write("\n" + "\n".join(lines))


@dataclass
class Codex:
    hrig: HarnessRig
    stub: ResponsesStub
    binary: Path
    home: Path  # $CODEX_HOME, the default ~/.codex of the throwaway HOME

    def env(self) -> dict[str, str]:
        return self.hrig.env(**{KEY_VAR: "stub-key"})

    def exec_argv(self, prompt: str, *, resume: str | None = None) -> list[str]:
        argv = [str(self.binary), "exec", "--skip-git-repo-check"]
        if resume is not None:
            argv += ["resume", resume]
        return [*argv, prompt]

    def exec_in_pane(self, pane: str, prompt: str, *, resume: str | None = None) -> Run:
        run = self.hrig.run_in_pane(pane, self.exec_argv(prompt, resume=resume), self.env())
        assert run.rc == 0, run.out + run.err + self.hrig.diagnostics()
        return run


def setup_codex(
    hrig: HarnessRig,
    stub: ResponsesStub,
    *,
    features: dict[str, bool] | None = None,
    wait_for_mcp: bool = False,
    trust: bool = True,
) -> Codex:
    binary = codex_binary()
    home = hrig.home / ".codex"
    notes = hrig.install("codex", home / "hooks.json")
    assert any("daemon_auto_start" in n for n in notes), notes
    config = home / "config.toml"
    # Top-level keys before the tables `install` wrote; the rest after them.
    head = (
        'model = "stub-model"\n'
        'model_provider = "stub"\n'
        # The model's shell call runs tmux on the private socket: outside Codex's sandbox.
        'approval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
        "check_for_update_on_startup = false\n\n"
    )
    tail = (
        "\n[model_providers.stub]\n"
        'name = "stub"\n'
        f"base_url = {json.dumps(stub.url + '/v1')}\n"
        'wire_api = "responses"\n'
        f"env_key = {json.dumps(KEY_VAR)}\n\n"
        f"[projects.{json.dumps(str(hrig.work))}]\n"
        'trust_level = "trusted"\n'
    )
    if features:
        tail += "\n[features]\n" + "".join(f"{k} = {str(v).lower()}\n" for k, v in features.items())
    text = config.read_text()
    if wait_for_mcp:
        # Codex sends the first request without waiting for MCP servers still starting (a
        # server ready later is offered from the next request on); `required` makes it wait.
        assert "[mcp_servers.tmux]\n" in text, text
        text = text.replace("[mcp_servers.tmux]\n", "[mcp_servers.tmux]\nrequired = true\n")
    config.write_text(head + text + tail)
    if trust:
        trust_hooks(home)
        found = hrig.tmuxlocd("doctor", "codex")
        trusted = re.search(r"trusted: (\d+) of (\d+) hook commands", found.stdout)
        assert trusted and trusted[1] == trusted[2] and int(trusted[1]) >= 3, found.stdout
    return Codex(hrig, stub, binary, home)


@pytest.fixture
def stub() -> Iterator[ResponsesStub]:
    s = ResponsesStub()
    s.start()
    try:
        yield s
    finally:
        s.stop()
    assert s.errors == []


def session_of(run: Run) -> str:
    m = SESSION_ID.search(run.err) or SESSION_ID.search(run.out)
    assert m is not None, run.err
    return m.group(1)


def panes_of(blocks: Sequence[Block]) -> list[str | None]:
    return [b.pane for b in blocks]


def told(body: Any) -> list[Block]:
    """The location blocks of a request that the hooks injected: those in a tool's output
    (the MCP server's answer) are not."""
    if not isinstance(body, dict):
        return []
    items = [i for i in input_items(body) if i.get("type") != "function_call_output"]
    return location_blocks(dict(body, input=items))


def added(requests: Sequence[Recorded], before: Any = None) -> list[Block]:
    """The blocks the requests added, each to the history the one before carried (the first
    to ``before``, the last request of an earlier run)."""
    out: list[Block] = []
    for req in requests:
        left = [b.text for b in told(before)]
        for block in told(req.body):
            if block.text in left:
                left.remove(block.text)
            else:
                out.append(block)
        before = req.body
    return out


class Rows:
    """Rows of the end-to-end report (``tests/e2e/report.py``), in the shape the other
    harnesses' scenarios write: per row the model requests since the last row, the location
    bytes of each and those it added, and the hooks that ran meanwhile.  A test records as
    it goes; a failed assertion stops it before the rows that follow."""

    def __init__(self, hrig: HarnessRig, stub: ResponsesStub) -> None:
        self.hrig = hrig
        self.stub = stub
        self.requests = 0
        self.hooks = 0

    def record(self, scenario: str) -> None:
        requests = self.stub.model_requests()[self.requests :]
        hooks = self.hrig.hook_runs()[self.hooks :]
        self.requests += len(requests)
        self.hooks += len(hooks)
        ms = [h.ms for h in hooks]
        prev: Any = None
        added = []
        for q in requests:
            added.append(sum(len(b.text.encode()) for b in new_blocks(prev, q.body)))
            prev = q.body
        report(
            {
                "harness": "codex",
                "package": PACKAGE,
                "version": VERSION,
                "scenario": scenario,
                "models": sorted(self.stub.models()),
                "requests": len(requests),
                "location_bytes": [location_bytes(q.body) for q in requests],
                "new_bytes": added,
                "hook_runs": len(hooks),
                "hook_events": sorted({h.event for h in hooks}),
                "hook_ms_median": round(statistics.median(ms), 1) if ms else None,
                "hook_ms_max": round(max(ms), 1) if ms else None,
                "hook_out_bytes": sum(h.out_bytes for h in hooks),
            }
        )


# ----------------------------------------------------------------------------------------------
# codex exec


def test_exec_runs_no_hook_until_it_is_trusted(hrig: HarnessRig, stub: ResponsesStub) -> None:
    """Codex skips untrusted hooks silently (``codex exec`` never asks); the doctor says so
    and how to trust; once the trust is recorded the same hooks run."""
    cx = setup_codex(hrig, stub, trust=False)
    hrig.start_daemon()
    found = hrig.tmuxlocd("doctor", "codex")
    untrusted = "SessionStart, UserPromptSubmit, PostToolUse, PermissionRequest, Stop"
    assert f"never trusted: {untrusted}" in found.stdout, found.stdout
    assert "open /hooks and trust" in found.stdout, found.stdout
    cx.exec_in_pane(hrig.first_pane, "before the trust")
    assert hrig.hook_runs() == [] and added(stub.model_requests()) == []
    trust_hooks(cx.home)
    before = len(stub.model_requests())
    cx.exec_in_pane(hrig.first_pane, "after the trust")
    # Stop too: the agent state's hook (spec §13), which injects nothing.
    assert {r.event for r in hrig.hook_runs()} == {"SessionStart", "UserPromptSubmit", "Stop"}
    assert panes_of(added(stub.model_requests()[before:])) == [hrig.first_pane]


def test_exec_agent_is_working_while_it_runs_and_gone_after(
    hrig: HarnessRig, stub: ResponsesStub
) -> None:
    """SPEC §13 with the real ``codex exec``: while the model is asked (after the prompt's
    hook) the daemon lists one Codex agent, in the pane, ``working``; its ``Stop`` hook
    runs just before the exit (idle), and a process that exited leaves no agent."""
    cx = setup_codex(hrig, stub)
    hrig.start_daemon()
    pane = hrig.first_pane
    seen: list[list[dict[str, Any]]] = []

    def decide(request: Recorded) -> Turn:
        # The model's answer waits until the daemon lists the agent: no race with the exit.
        poll(lambda: bool(hrig.agents()), 20, "the agent while codex exec runs", interval=0.05)
        seen.append(hrig.agents())
        return Text("done")

    stub.decide = decide
    run = cx.exec_in_pane(pane, "a prompt")
    assert seen, hrig.diagnostics()
    (agent,) = seen[0]
    assert agent["harness"] == "codex" and agent["pane"] == pane, agent
    assert agent["state"] == "working", agent
    assert agent["session_id"] == session_of(run), agent
    assert "Stop" in {h.event for h in hrig.hook_runs()}  # its idle report, just before the exit
    # Gone once the process exited (its pidfd): no SessionEnd event in Codex.
    poll(lambda: hrig.agents() == [], 20, "the agent gone after codex exec exited")


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_exec_told_once_then_nothing_on_unchanged_resume_then_the_split(
    hrig: HarnessRig, stub: ResponsesStub, daemon: bool
) -> None:
    cx = setup_codex(hrig, stub)
    if daemon:
        hrig.start_daemon()
    rows = Rows(hrig, stub)
    pane = hrig.first_pane
    first = cx.exec_in_pane(pane, "first prompt")
    reqs = stub.model_requests()
    got = added(reqs)
    assert panes_of(got) == [pane], hrig.diagnostics()
    assert got[0].text.startswith("tmux location:\n"), got[0].text
    assert "neighbors: above none; below none; left none; right none" in got[0].text

    session = session_of(first)
    last, before = reqs[-1].body, len(reqs)
    cx.exec_in_pane(pane, "second prompt, nothing moved", resume=session)
    reqs = stub.model_requests()[before:]
    # The resumed history replays the block told at the start, and nothing is added.
    assert panes_of(told(reqs[0].body)) == [pane], hrig.diagnostics()
    assert added(reqs, last) == [], hrig.diagnostics()
    if daemon:
        rows.record("first_prompt_then_resume")

    right = hrig.split(pane)
    last, before = reqs[-1].body, len(stub.model_requests())
    cx.exec_in_pane(pane, "third prompt, after a split", resume=session)
    got = added(stub.model_requests()[before:], last)
    assert panes_of(got) == [pane], hrig.diagnostics()
    assert f"right {right}" in got[0].neighbors, got[0].text
    rows.record("split_from_outside" if daemon else "daemon_down")


def test_exec_tells_the_change_after_the_shell_tool_splits_the_pane(
    hrig: HarnessRig, stub: ResponsesStub
) -> None:
    cx = setup_codex(hrig, stub)
    hrig.start_daemon()
    pane = hrig.first_pane
    split = shlex.join(hrig.tmux_argv("split-window", "-d", "-v", "-t", pane))

    def decide(request: Recorded) -> Turn:
        if tool_results(request.body):
            return Text("done")
        return ToolCall(SHELL_TOOL, {"cmd": split})

    stub.decide = decide
    cx.exec_in_pane(pane, "split this pane")
    reqs = stub.model_requests()
    assert len(reqs) >= 2 and tool_results(reqs[-1].body), [r.body for r in reqs]
    below = [p for p in hrig.panes() if p != pane]
    assert len(below) == 1
    got = added(reqs)
    # The start's block, then the change, told after the tool call (PostToolUse).
    assert panes_of(got) == [pane, pane], hrig.diagnostics()
    assert "below none" in got[0].neighbors
    assert f"below {below[0]}" in got[1].neighbors, got[1].text
    first_with_result = next(i for i, r in enumerate(reqs) if tool_results(r.body))
    assert added([reqs[first_with_result]], reqs[first_with_result - 1].body) == [got[1]]
    Rows(hrig, stub).record("tool_call_splits_the_pane")


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_exec_outside_a_pane_is_told_nothing(
    hrig: HarnessRig, stub: ResponsesStub, daemon: bool
) -> None:
    cx = setup_codex(hrig, stub)
    if daemon:
        hrig.start_daemon()
    run = hrig.run_outside(cx.exec_argv("a prompt from no pane"), cx.env())
    assert run.rc == 0, run.out + run.err
    reqs = stub.model_requests()
    assert reqs
    ran = {r.event for r in hrig.hook_runs()}
    assert {"SessionStart", "UserPromptSubmit"} <= ran, hrig.diagnostics()
    assert added(reqs) == [], hrig.diagnostics()
    Rows(hrig, stub).record("outside_a_pane" if daemon else "outside_a_pane, daemon down")


def test_exec_mcp_where_am_i_names_the_pane(hrig: HarnessRig, stub: ResponsesStub) -> None:
    cx = setup_codex(hrig, stub, wait_for_mcp=True)
    hrig.start_daemon()
    pane = hrig.split(hrig.first_pane)  # not the first pane: the answer is not a default

    def decide(request: Recorded) -> Turn:
        if tool_results(request.body):
            return Text("done")
        assert "mcp__tmux__where_am_i" in tool_names(request.body)
        return ToolCall("mcp__tmux__where_am_i", {})

    stub.decide = decide
    cx.exec_in_pane(pane, "where am I?")
    results = tool_results(stub.model_requests()[-1].body)
    assert len(results) == 1, results
    assert mcp_names_pane(results[0], pane), results[0]
    Rows(hrig, stub).record("mcp_where_am_i")


# ----------------------------------------------------------------------------------------------
# Two interactive TUIs, one shared app-server


def capture(hrig: HarnessRig, pane: str) -> str:
    return hrig.rig.tmux.run("capture-pane", "-p", "-t", pane)


def start_tui(cx: Codex, pane: str, *args: str) -> None:
    """The interactive TUI in the foreground of ``pane``, on its tty, with the test's env."""
    env = cx.env()
    lines = ["cd " + shlex.quote(str(cx.hrig.work))]
    lines += [
        f"export {k}={shlex.quote(v)}"
        for k, v in sorted(env.items())
        if k not in ("TMUX", "TMUX_PANE") and k.isidentifier()
    ]
    lines.append("exec " + shlex.join([str(cx.binary), *args]))
    script = cx.hrig.root / f"tui-{pane[1:]}.sh"
    script.write_text("\n".join(lines) + "\n")
    cx.hrig.rig.tmux.run("send-keys", "-t", pane, f"exec sh {script}", "Enter")
    poll(
        lambda: "Ask Codex to do anything" in capture(cx.hrig, pane),
        90,
        f"Codex's prompt in {pane}",
        interval=0.1,
    )


def submit(cx: Codex, pane: str, prompt: str) -> list[Recorded]:
    """Types ``prompt`` (then Enter once the composer shows it: keys that arrive together
    are taken as a paste, where Enter is a newline) and waits for the model's answer to be
    shown; the requests that carry the prompt."""
    hrig = cx.hrig
    hrig.rig.tmux.run("send-keys", "-t", pane, "-l", prompt)
    poll(lambda: prompt in capture(hrig, pane), 30, f"{prompt!r} typed in {pane}", interval=0.05)
    hrig.rig.tmux.run("send-keys", "-t", pane, "Enter")
    answer = f"answer to {prompt}"
    poll(lambda: answer in capture(hrig, pane), 90, f"the answer in {pane}", interval=0.1)
    return [r for r in cx.stub.model_requests() if prompt in user_texts(r.body)]


def quit_tui(cx: Codex, pane: str) -> None:
    """``/quit`` typed into the TUI; returns once its pane has closed."""
    hrig = cx.hrig
    hrig.rig.tmux.run("send-keys", "-t", pane, "-l", "/quit")
    poll(lambda: "/quit" in capture(hrig, pane), 30, f"/quit typed in {pane}", interval=0.05)
    # An Enter can land on the command's completion menu (which then completes instead of
    # running it): Enter again until the pane closes.
    for _ in range(4):
        # check=False: the pane may close between the last look and this key.
        hrig.rig.tmux.run("send-keys", "-t", pane, "Enter", check=False)
        try:
            poll(lambda: pane not in hrig.panes(), 15, f"{pane} to close", interval=0.1)
            return
        except AssertionError:
            continue
    raise AssertionError(f"the TUI in {pane} did not quit:\n{capture(hrig, pane)}")


def answer_each(decide_for: dict[str, Decide]) -> Decide:
    """A model that answers ``answer to <prompt>`` to the prompt of the turn (the last user
    message: the history holds the earlier ones), after whatever ``decide_for[prompt]`` asks
    first."""

    def decide(request: Recorded) -> Turn:
        texts = user_texts(request.body)
        inner = decide_for.get(texts[-1]) if texts else None
        if inner is None:
            return Text("ok")  # a side request (a thread's title), or no prompt of ours
        turn = inner(request)
        return Text(f"answer to {texts[-1]}") if isinstance(turn, Text) else turn

    return decide


def mcp_then_text(request: Recorded) -> Turn:
    if tool_results(request.body):
        return Text("done")
    return ToolCall("mcp__tmux__where_am_i", {})


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    sid: int
    tty: str
    args: str


def process_tree(codex: Codex) -> tuple[str, list[Proc]]:
    """``ps -o pid,ppid,sid,tty,args`` of this test's Codex processes (the TUIs in its panes,
    the copy the shared server runs from its HOME) and their children, as text and parsed."""
    out = subprocess.run(
        ["ps", "-ww", "-eo", "pid,ppid,sid,tty,args"], capture_output=True, text=True, check=True
    ).stdout
    head, *lines = out.splitlines()
    everyone = []
    for line in lines:
        pid, ppid, sid, tty, args = line.split(None, 4)
        everyone.append(Proc(int(pid), int(ppid), int(sid), tty, args))
    # The TUIs are the panes' own processes (``exec``): other runs of the same binary (a
    # test beside this one) are not this test's.
    panes = codex.hrig.rig.tmux.run("list-panes", "-a", "-F", "#{pane_pid}", check=False)
    tuis = {int(pid) for pid in panes.split()}
    ours = {
        p.pid
        for p in everyone
        if str(codex.home) in p.args or (p.pid in tuis and p.args.startswith(str(codex.binary)))
    }
    rows = [p for p in everyone if p.pid in ours or p.ppid in ours]
    text = "\n".join(
        [head] + [f"{p.pid:>7} {p.ppid:>7} {p.sid:>7} {p.tty:<8} {p.args}" for p in rows]
    )
    return text, rows


def app_server_finding(cx: Codex) -> str:
    """What ``tmuxlocd doctor codex`` says of the app-servers: its ``app-server`` line."""
    out = cx.hrig.tmuxlocd("doctor", "codex").stdout
    lines = [line for line in out.splitlines() if "app-server" in line]
    assert lines, out
    return lines[0].strip()


def app_server_pids(codex_home: Path) -> list[int]:
    """The shared app-server and its updater, from the pid files Codex keeps in this HOME,
    each only while its command line still runs from this HOME (a reused pid is not)."""
    pids = []
    for name in ("daemon.pid", "daemon-updater.pid"):
        try:
            pid = int(json.loads((codex_home / "app-server-daemon" / name).read_text())["pid"])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError, KeyError):
            continue
        if str(codex_home).encode() in cmdline:
            pids.append(pid)
    return pids


def end_app_server(codex_home: Path) -> None:
    """A TUI leaves the shared server running when it exits: end it, by pid."""
    pids = app_server_pids(codex_home)
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    try:
        poll(lambda: all(process_ended(p) for p in pids), 10, "the shared app-server to exit")
    except AssertionError:
        for pid in app_server_pids(codex_home):  # still running from this HOME
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("shared", [True, False], ids=["shared-app-server", "one-per-tui"])
def test_two_tuis_each_told_its_own_pane_or_nothing(
    hrig: HarnessRig, stub: ResponsesStub, shared: bool
) -> None:
    cx = setup_codex(hrig, stub, features={"daemon_auto_start": shared}, wait_for_mcp=True)
    hrig.start_daemon()
    a = hrig.first_pane
    b = hrig.split(a)
    prompt_a, prompt_b = "hello from the left pane", "hello from the right pane"
    prompt_later = "hello again once the left one quit"
    stub.decide = answer_each(
        {prompt_a: always_text, prompt_b: mcp_then_text, prompt_later: always_text}
    )
    # The daemon's agents once each answer is shown (the Stop hook may end just after).
    listed: list[list[tuple[str, str]]] = []

    def agents_now() -> None:
        def settled() -> bool:
            found = hrig.agents()
            return (shared and len(listed) == 2) or (
                bool(found) and all(x["state"] == "idle" for x in found)
            )

        try:
            poll(settled, 10, "the agents idle", interval=0.05)
        except AssertionError:
            pass  # asserted below, with what was listed
        listed.append(sorted((x["pane"], x["state"]) for x in hrig.agents()))

    try:
        start_tui(cx, a)
        got_a = submit(cx, a, prompt_a)
        agents_now()
        doctors = [app_server_finding(cx)]
        start_tui(cx, b)
        got_b = submit(cx, b, prompt_b)
        agents_now()
        doctors.append(app_server_finding(cx))
        tree, procs = process_tree(cx)
        # The TUI that started the shared server quits (its pane closes with it): the server
        # lives on, re-parented, and the other TUI's next prompt is still its own or nothing.
        quit_tui(cx, a)
        later = submit(cx, b, prompt_later)
        agents_now()
        tree_later, _ = process_tree(cx)
    finally:
        # The TUIs end with the tmux server (cleanup); the shared server outlives them.
        hrig.rig.tmux.run("kill-server", check=False)
        end_app_server(cx.home)
    print(tree)

    print(f"agents listed after each answer: {listed}")
    print("doctor codex beside one TUI, then two: " + " | ".join(doctors))
    if shared:
        assert "1 TUI" not in doctors[0] and "TUI" in doctors[0], doctors
        assert "connected; a session begun now is told its pane" in doctors[0], doctors
        assert "2 TUIs connected" in doctors[1], doctors
    else:
        assert all("its own app-server" in d for d in doctors), doctors
    if shared:
        # The hooks are the shared server's children, in no pane; the kernel pairs the
        # server's accepted sockets with its clients (SPEC §2, verified_by client): A's
        # session began while A was the one client and is bound to it; B's began beside A,
        # and is never placed (once A quits, B is the one client, but a session that began
        # with two cannot be told from a quit TUI's turn that the server still runs).
        assert listed == [[(a, "idle")], [(a, "idle")], []], (
            f"{listed}\n{tree}\n{hrig.diagnostics()}"
        )
    else:
        # Each TUI runs its own session, its hooks its children: its agent in its own pane.
        assert listed == [[(a, "idle")], [(a, "idle"), (b, "idle")], [(b, "idle")]], listed
    servers = [p for p in procs if serves_sessions(p.args.replace(" ", "\0").encode())]
    mcps = [p for p in procs if p.args.endswith("tmuxlocd mcp")]
    if shared:
        # One server, in a session of its own with no tty, runs both sessions' MCP servers.
        assert len(servers) == 1 and servers[0].tty == "?", tree
        assert len(mcps) == 2 and {p.ppid for p in mcps} == {servers[0].pid}, tree
    else:
        assert servers == [], tree
        assert len(mcps) == 2 and all(p.tty != "?" for p in mcps), tree

    told_a = [bl for r in got_a for bl in told(r.body)]
    told_b = [bl for r in got_b for bl in told(r.body)]
    told_later = added(later, got_b[-1].body)
    print(f"after the first TUI quit:\n{tree_later}")
    assert set(panes_of(told_later)) <= {b}, f"{tree_later}\n{hrig.diagnostics()}"
    if shared:
        assert told_later == [], f"{tree_later}\n{hrig.diagnostics()}"
    else:
        # Alone in its window now: its new neighbours, told once.
        assert panes_of(told_later) == [b], hrig.diagnostics()
        assert "left none" in told_later[0].neighbors, told_later[0].text
    detail = f"process tree:\n{tree}\n{hrig.diagnostics()}"
    # The hooks did run, for both sessions: what the models got is their answer.
    events: dict[str, set[str]] = {}
    for run in hrig.hook_runs():
        events.setdefault(run.session, set()).add(run.event)
    started = [k for k, v in events.items() if {"SessionStart", "UserPromptSubmit"} <= v]
    assert len(started) == 2, detail
    # Never the other pane's; with one app-server per TUI, each its own.
    assert set(panes_of(told_a)) <= {a}, detail
    assert set(panes_of(told_b)) <= {b}, detail
    results = [t for r in got_b for t in tool_results(r.body)]
    assert results, detail
    assert not mcp_names_pane(results[-1], a), results[-1]
    if shared:
        # A alone: its pane; B beside A: nothing (two clients), and its MCP tool says why.
        assert panes_of(told_a) and not told_b, detail
        assert "shared_ancestor" in results[-1], results[-1]
    else:
        assert told_a and told_b, detail
        assert mcp_names_pane(results[-1], b), results[-1]
    how = "shared app-server" if shared else "daemon_auto_start = false"
    for name, pane, got in (("A", a, told_a), ("B", b, told_b)):
        # What each model was got: the distinct blocks, once each.
        unique = list({bl.text: bl for bl in got}.values())
        size = sum(len(bl.text.encode()) for bl in unique)
        print(f"{how}: TUI {name} in {pane}: {len(unique)} block(s), {size} B, {panes_of(unique)}")
    # Codex puts "Wall time: ...\nOutput:" before the server's text.
    mcp_answer = results[-1].rpartition("Output:")[2].strip().split("\n", 1)[0]
    print(f"{how}: MCP where_am_i from TUI B: {mcp_answer}")
    Rows(hrig, stub).record(f"two TUIs, {how}")


def test_tui_in_process_asks_to_escalate_waiting_then_working_idle_gone(
    hrig: HarnessRig, stub: ResponsesStub
) -> None:
    """SPEC §13 with the real TUI running its session in-process (``daemon_auto_start =
    false``: its hooks are its children, in its pane) in a sandbox that asks: ``working``
    while the model is asked, ``waiting`` on its PermissionRequest when the model's shell
    call asks to leave the sandbox, ``working`` right after the approved command ran (its
    PostToolUse), ``idle`` after the turn, gone at once when the TUI is killed."""
    cx = setup_codex(hrig, stub, features={"daemon_auto_start": False})
    hrig.start_daemon()
    pane = hrig.first_pane
    target = hrig.work / "escalated.txt"
    prompt = "write the file outside the sandbox"
    seen: dict[str, tuple[str, float]] = {}

    def escalate(request: Recorded) -> Turn:
        if tool_results(request.body):
            seen.setdefault("after the tool", hrig.state_within("working"))
            return Text("done")
        seen.setdefault("asking the model", hrig.state_within("working"))
        return ToolCall(
            SHELL_TOOL,
            {
                "cmd": f"echo approved > {shlex.quote(str(target))}",
                "sandbox_permissions": "require_escalated",
                "justification": "May I write the file outside the sandbox?",
            },
        )

    stub.decide = answer_each({prompt: escalate})
    try:
        start_tui(cx, pane, "--sandbox", "workspace-write", "--ask-for-approval", "on-request")
        hrig.rig.tmux.run("send-keys", "-t", pane, "-l", prompt)
        poll(lambda: prompt in capture(hrig, pane), 30, "the prompt typed", interval=0.05)
        hrig.rig.tmux.run("send-keys", "-t", pane, "Enter")
        poll(
            lambda: "Would you like to run" in capture(hrig, pane),
            90,
            "the approval dialog",
            interval=0.1,
        )
        poll(
            lambda: [x["state"] for x in hrig.agents()] == ["waiting"],
            20,
            "the agent waiting",
            interval=0.05,
        )
        (asking,) = hrig.agents()
        assert asking["pane"] == pane and asking["harness"] == "codex", asking
        assert not target.exists()
        hrig.rig.tmux.run("send-keys", "-t", pane, "y")  # Yes, proceed
        poll(lambda: f"answer to {prompt}" in capture(hrig, pane), 90, "the answer", interval=0.1)
        poll(
            lambda: [x["state"] for x in hrig.agents()] == ["idle"],
            20,
            "the agent idle",
            interval=0.05,
        )
        (agent,) = hrig.agents()
        events = [h.event for h in hrig.hook_runs()]
        # The TUI is the pane's process: the pane stays, dead, so that what ends the agent
        # is the process's exit (the daemon's pidfd), not the pane closing.
        hrig.rig.tmux.run("set-option", "-p", "-t", pane, "remain-on-exit", "on")
        ended, took = hrig.kill_agent_process(agent["pid"])
    finally:
        hrig.rig.tmux.run("kill-server", check=False)
        end_app_server(cx.home)
    print(
        f"codex TUI: waiting {asking['reason']!r}; working "
        f"{seen['after the tool'][1] * 1000:.0f} ms into the request after the tool; gone "
        f"{took * 1000:.1f} ms after kill -9, {(took - ended) * 1000:.1f} ms after its exit "
        f"(pid {agent['pid']}); events {events}"
    )
    assert target.read_text() == "approved\n"
    assert asking["reason"] == "permission: Bash", f"{asking}\n{hrig.diagnostics()}"
    assert seen["asking the model"][0] == "working", seen
    assert seen["after the tool"][0] == "working", f"{seen}\n{hrig.diagnostics()}"
    # The daemon's part (SPEC §13: the pidfd); the kernel's ending of the process is not.
    assert took - ended < 0.1, (ended, took)


def test_a_departed_tuis_turn_is_never_placed_in_the_other_tuis_pane(
    hrig: HarnessRig, stub: ResponsesStub
) -> None:
    """TUI A's turn is held by the model; TUI B connects; A is killed (its pane closes) and B
    is the shared server's one client.  Whatever A's thread still does on the server (its
    hooks, its agent), it is never placed in B's pane: B's pane is B's session's alone."""
    import threading

    cx = setup_codex(hrig, stub, features={"daemon_auto_start": True})
    hrig.start_daemon()
    a = hrig.first_pane
    b = hrig.split(a)
    prompt_a, prompt_b = "a slow question from the left pane", "hello from the right pane"
    release = threading.Event()
    held = threading.Event()

    def hold(request: Recorded) -> Turn:
        # A's turn: held at the model; once released (A gone), a shell call, whose result
        # goes back to the model with whatever the hooks add (PostToolUse), then an answer.
        if tool_results(request.body):
            return Text("late")
        held.set()
        release.wait(60)
        return ToolCall(SHELL_TOOL, {"cmd": "true"})

    stub.decide = answer_each({prompt_a: hold, prompt_b: always_text})
    try:
        start_tui(cx, a)
        hrig.rig.tmux.run("send-keys", "-t", a, "-l", prompt_a)
        poll(lambda: prompt_a in capture(hrig, a), 30, "the prompt typed", interval=0.05)
        hrig.rig.tmux.run("send-keys", "-t", a, "Enter")
        poll(held.is_set, 60, "A's turn at the model", interval=0.05)
        start_tui(cx, b)
        tui_a = int(hrig.rig.tmux.run("display", "-p", "-t", a, "#{pane_pid}"))
        os.kill(tui_a, signal.SIGKILL)
        poll(lambda: a not in hrig.panes(), 30, f"{a} to close", interval=0.1)
        runs_before = len(hrig.hook_runs())
        release.set()
        got_b = submit(cx, b, prompt_b)
        poll(
            lambda: any(x["state"] == "idle" for x in hrig.agents()),
            30,
            "B's agent idle",
            interval=0.05,
        )
        agents = hrig.agents()
        tree, _ = process_tree(cx)
    finally:
        release.set()
        hrig.rig.tmux.run("kill-server", check=False)
        end_app_server(cx.home)
    later_runs = hrig.hook_runs()[runs_before:]
    # What A's model got once A was gone: never B's pane.
    orphan = [
        bl
        for r in stub.model_requests()
        if prompt_a in user_texts(r.body) and tool_results(r.body)
        for bl in told(r.body)
    ]
    print(f"A's turn after A was killed was told: {panes_of(orphan)}")
    assert b not in panes_of(orphan), orphan
    print(tree)
    print(f"hook runs after A was killed: {[(r.event, r.session) for r in later_runs]}")
    print(f"agents: {[(x['pane'], x['session_id'], x['state']) for x in agents]}")
    assert any(r.event == "PostToolUse" for r in later_runs), later_runs  # A's turn went on
    sessions = {r.session for r in later_runs if r.event == "UserPromptSubmit"}
    assert len(sessions) == 1, later_runs  # B's prompt
    (b_session,) = sessions
    # Every agent listed in B's pane is B's session; A's is not there.
    assert all(x["session_id"] == b_session for x in agents if x["pane"] == b), agents
    assert set(panes_of([bl for r in got_b for bl in told(r.body)])) <= {b}


def test_one_tui_on_the_shared_app_server_is_told_its_pane_once_then_changes(
    hrig: HarnessRig, stub: ResponsesStub
) -> None:
    """Codex as people run it: one interactive TUI, the default configuration (its sessions in
    the shared app-server it starts).  The first prompt's request carries its pane, an
    unchanged prompt adds nothing, a split from outside is told once, at the next prompt;
    its agent is listed in its pane, and gone with the TUI."""
    cx = setup_codex(hrig, stub)  # daemon_auto_start left as Codex ships it: on
    hrig.start_daemon()
    a = hrig.first_pane
    prompts = ["first question", "second question, nothing moved", "third, after a split"]
    stub.decide = answer_each(dict.fromkeys(prompts, always_text))
    rows = Rows(hrig, stub)
    try:
        start_tui(cx, a)
        first = submit(cx, a, prompts[0])
        rows.record("TUI on the shared app-server: first prompt")
        second = submit(cx, a, prompts[1])
        rows.record("TUI on the shared app-server: unchanged prompt")
        b = hrig.split(a)
        third = submit(cx, a, prompts[2])
        rows.record("TUI on the shared app-server: after a split")
        poll(
            lambda: [(x["pane"], x["state"]) for x in hrig.agents()] == [(a, "idle")],
            10,
            "its agent idle in its pane",
            interval=0.05,
        )
        tree, _ = process_tree(cx)
        assert app_server_pids(cx.home), f"no shared app-server ran:\n{tree}"
        tui = int(hrig.rig.tmux.run("display", "-p", "-t", a, "#{pane_pid}"))
        os.kill(tui, signal.SIGKILL)
        poll(lambda: hrig.agents() == [], 10, "its agent gone with the TUI", interval=0.05)
    finally:
        hrig.rig.tmux.run("kill-server", check=False)
        end_app_server(cx.home)
    told_first = [bl for r in first for bl in told(r.body)]
    added_second = added(second, first[-1].body)
    added_third = added(third, second[-1].body)
    for name, got in (("first", told_first), ("unchanged", added_second), ("split", added_third)):
        size = sum(len(bl.text.encode()) for bl in {bl.text: bl for bl in got}.values())
        print(f"one TUI, shared app-server, {name}: {size} B, {panes_of(got)}")
    detail = f"{tree}\n{hrig.diagnostics()}"
    assert set(panes_of(told_first)) == {a}, detail
    assert added_second == [], detail
    assert panes_of(added_third) == [a], detail
    assert f"right {b}" in added_third[0].neighbors, added_third[0].text
