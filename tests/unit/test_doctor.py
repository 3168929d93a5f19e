"""``tmuxlocd doctor``'s decisions (``tmuxlocd.clients.doctor``), on the files ``install`` writes.

Every file here is made by ``tmuxlocd.clients.install``'s own planning (``plan_files``) and then
changed the way a user, a harness or a moved installation changes it.  The Codex hashes are
the ones Codex 0.169.0 itself computed (``codex app-server``, ``hooks/list``, ``currentHash``)
for these very commands: the doctor's recipe is held to Codex's, not to itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from tmuxlocd.clients import doctor, doctor_probe, install
from tmuxlocd.clients.doctor import OK, PROBLEM, WARNING, Finding, PathFacts
from tmuxlocd.core.harnesses import codex

HOME = Path("/home/u")
CWD = HOME / "work"
ENV: dict[str, str] = {}


def venv(root: str) -> tuple[list[str], list[str]]:
    """(the MCP command, the hook launcher) of an installation in the virtualenv ``root``."""
    return [f"{root}/bin/tmuxlocd"], [
        f"{root}/bin/python3",
        "-S",
        f"{root}/lib/python3.12/site-packages/tmuxlocd/context.py",  # as installs wrote it before
    ]


EXE, HOOK = venv("/opt/tools/venv")
OLD_EXE, OLD_HOOK = venv("/old/venv")
ALL_THERE = PathFacts(
    executables=frozenset({EXE[0], HOOK[0]}), files=frozenset({EXE[0], HOOK[0], HOOK[2]})
)

# What Codex 0.169.0 answered in hooks/list for the hooks `install codex` writes.
# The hashes of the three context events are Codex's own (as its /hooks wrote them); those of
# the two agent-state events were made by ``doctor.codex_hook_hash``, which the first three
# and ``test_codex_hash_is_codexs`` check against Codex's.
CODEX_HASHES = {
    "/opt/tools/venv": {
        "PostToolUse": "sha256:3dac3b463dbc07d6a81a67b173b4c205c9086796b0c535016130f798c9b9e35e",
        "SessionStart": "sha256:adf593529e9f4fec789fab57cc0dad053018a29951a4c2f1845173030f9d73ca",
        "UserPromptSubmit": (
            "sha256:65e67fec796dace5dfb48a9d7695e7ad2910e849e38fc13f3d7bbf39d895a587"
        ),
        "PermissionRequest": (
            "sha256:d254ce2e19147416276e0ad3c742c7d1be7b6d71ce6413f9cbee352eb32c04e2"
        ),
        "Stop": "sha256:03beb6072411f374d7b77f738db5991206f59c00ef940eda6e851270cf2d60d5",
    },
    "/old/venv": {
        "PostToolUse": "sha256:d1a621482dedcafb76fb017f95869f1d16f4a275072a68e49d6bfb3811b98bcb",
        "SessionStart": "sha256:89ef9bfe29d1c494426450f1cbdd21ac2e210af3f35e125f7503ab64874d8c2b",
        "UserPromptSubmit": (
            "sha256:6c9e28d81992789c40e60f1c8cb523a6a0104ddb3425a32df15a76d91bfdf821"
        ),
        "PermissionRequest": (
            "sha256:baee8a7fe5b6c9e6a93a10423230b71d5109b1d89b50402c1f55692fa911a32b"
        ),
        "Stop": "sha256:e200ca1c2fd9eb51eb10d554a1a2752a497aea069d8d333dedc3b7d5d116f0cf",
    },
}
CODEX_LABELS = {
    "PostToolUse": "post_tool_use",
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "PermissionRequest": "permission_request",
    "Stop": "stop",
}


class Setup:
    """One harness's files as ``install`` wrote them, and the doctor's view of them."""

    def __init__(
        self,
        harness: str,
        *,
        project: bool = False,
        exe: list[str] = EXE,
        hook: list[str] = HOOK,
        floor: int = 0,
    ) -> None:
        self.harness = harness
        self.project = project
        self.where = doctor.sources(harness, project, HOME, CWD, ENV)
        self.texts: dict[Path, str | None] = dict.fromkeys(self.where.values())
        self.install(exe, hook, floor)

    def install(self, exe: list[str], hook: list[str], floor: int = 0) -> None:
        paths = install.config_paths(self.harness, self.project, HOME, CWD, ENV)
        before = {p: self.texts[p] or "" for p in paths.values()}
        plans = install.plan_files(
            self.harness, before, paths, exe, hook, remove=False, min_interval_ms=floor
        )
        for plan in plans:
            self.texts[plan.path] = plan.after or None

    def json(self, role: str) -> dict[str, Any]:
        text = self.texts[self.where[role]]
        value: dict[str, Any] = json.loads(text) if text else {}
        return value

    def set_json(self, role: str, data: Mapping[str, Any]) -> None:
        self.texts[self.where[role]] = json.dumps(data, indent=2) + "\n"

    def toml(self, role: str) -> tomlkit.TOMLDocument:
        return tomlkit.parse(self.texts[self.where[role]] or "")

    def set_toml(self, role: str, doc: tomlkit.TOMLDocument) -> None:
        self.texts[self.where[role]] = tomlkit.dumps(doc)

    def trust(self, hashes: Mapping[str, str], *, group: int = 0, **extra: Any) -> None:
        """Trust state as Codex's /hooks writes it (``[hooks.state."<key>"] trusted_hash``)."""
        hooks_json = str(self.where["hooks"])
        lines = [self.texts[self.where["state"]] or "", "[hooks.state]\n"]
        for event, value in hashes.items():
            lines.append(f'\n[hooks.state."{hooks_json}:{CODEX_LABELS[event]}:{group}:0"]\n')
            lines.append(f'trusted_hash = "{value}"\n')
            for k, v in extra.items():
                lines.append(f"{k} = {json.dumps(v)}\n")
        self.texts[self.where["state"]] = "".join(lines)

    def run(self, paths: PathFacts = ALL_THERE, **kw: Any) -> list[Finding]:
        return doctor.diagnose(
            self.harness,
            project=self.project,
            where=self.where,
            texts=self.texts,
            paths=paths,
            cwd=CWD,
            exe_hint=EXE,
            python_hint=HOOK[0],
            **kw,
        )


def status(findings: list[Finding], check: str) -> list[str]:
    return [f.status for f in findings if f.check == check]


def one(findings: list[Finding], check: str) -> Finding:
    matching = [f for f in findings if f.check == check]
    assert len(matching) == 1, findings
    return matching[0]


def claude_json_with_mcp(exe: list[str] = EXE) -> str:
    """~/.claude.json after `claude mcp add --scope user tmux -- <exe> mcp`."""
    entry = {"type": "stdio", "command": exe[0], "args": ["mcp"], "env": {}}
    return json.dumps({"numStartups": 3, "mcpServers": {"tmux": entry}}, indent=2)


# ----------------------------------------------------------------------------------------------
# Healthy installations.


def test_claude_healthy() -> None:
    s = Setup("claude")
    s.texts[s.where["claude_json"]] = claude_json_with_mcp()
    found = s.run()
    assert {f.check: f.status for f in found} == {
        "hooks": OK,
        "hook-command": OK,
        "hooks-enabled": OK,
        "mcp": OK,
        "mcp-command": OK,
    }
    assert doctor.exit_status(found) == 0
    assert "SessionStart, UserPromptSubmit, PostToolUse (Bash)" in one(found, "hooks").found
    assert HOOK[2] in one(found, "hook-command").found


def test_claude_user_mcp_is_the_users_to_add() -> None:
    found = Setup("claude").run()
    mcp = one(found, "mcp")
    assert mcp.status == WARNING  # install cannot write ~/.claude.json: it prints the command
    assert mcp.fix == f"claude mcp add --scope user tmux -- {EXE[0]} mcp"
    assert doctor.exit_status(found) == 0


def test_claude_project_healthy() -> None:
    found = Setup("claude", project=True).run()
    assert all(f.status == OK for f in found), found
    assert str(CWD / ".mcp.json") in one(found, "mcp").found


def test_gemini_healthy() -> None:
    found = Setup("gemini").run()
    assert all(f.status == OK for f in found), found
    assert "SessionStart, BeforeAgent, AfterTool (run_shell_command), PreCompress" in (
        one(found, "hooks").found
    )


def test_codex_healthy_when_trusted_for_these_commands() -> None:
    s = Setup("codex")
    s.trust(CODEX_HASHES["/opt/tools/venv"])
    found = s.run()
    assert all(f.status == OK for f in found), found
    assert one(found, "trust").found.startswith("trusted: 5 of 5 hook commands")


def test_codex_hash_is_codexs() -> None:
    data = Setup("codex").json("hooks")
    for hook in doctor.our_hooks(data):
        want = CODEX_HASHES["/opt/tools/venv"][hook.event]
        assert codex.hook_hash(hook.event, hook.matcher, hook.entry) == want
    # Fields install never writes, as Codex 0.169.0 hashed them: a status message, async, no
    # timeout (600 s), a timeout of 0 (1 s), a matcher on an event that has none (ignored).
    entry = {"type": "command", "command": "prettier --write", "statusMessage": "formatting"}
    assert codex.hook_hash("PostToolUse", "Edit|Write", {**entry, "async": True}) == (
        "sha256:688e9eeac97b4bc7054b9e0f921a71ec68ac27a5ee83aaea61f459b442cc3731"
    )
    date = {"type": "command", "command": "date", "timeout": 0}
    assert codex.hook_hash("UserPromptSubmit", "ignored", date) == (
        "sha256:9f5326b2f0d9e750383ddd2ef9d23bb702ac342bcc892703fce270094f78ba67"
    )
    assert codex.hook_hash("PostToolUse", None, {**date, "once": True}) is None


# ----------------------------------------------------------------------------------------------
# Hooks missing.


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini"])
def test_a_hook_missing(harness: str) -> None:
    s = Setup(harness)
    data = s.json("hooks")
    tool_event = {"claude": "PostToolUse", "codex": "PostToolUse", "gemini": "AfterTool"}[harness]
    del data["hooks"][tool_event]
    s.set_json("hooks", data)
    found = s.run()
    hooks = one(found, "hooks")
    assert hooks.status == PROBLEM
    assert f"missing {tool_event} (" in hooks.found
    assert hooks.fix == f"tmuxlocd install {harness}"
    assert doctor.exit_status(found) == 1


def test_a_hook_under_another_matcher_is_missing() -> None:
    s = Setup("claude")
    data = s.json("hooks")
    data["hooks"]["PostToolUse"][0]["matcher"] = "Edit"
    s.set_json("hooks", data)
    assert "missing PostToolUse (Bash)" in one(s.run(), "hooks").found


def test_not_installed_named_or_found() -> None:
    s = Setup("gemini")
    s.texts = dict.fromkeys(s.where.values())
    s.texts[s.where["hooks"]] = '{"theme": "Dracula"}\n'
    named = s.run()
    assert [(f.check, f.status) for f in named] == [("hooks", PROBLEM)]
    assert named[0].found.startswith("tmuxlocd is not installed for Gemini CLI")
    assert not doctor.installed(named)
    found = s.run(explicit=False)
    assert [(f.check, f.status) for f in found] == [("hooks", WARNING)]


def test_the_same_hook_twice() -> None:
    s = Setup("claude")
    data = s.json("hooks")
    data["hooks"]["UserPromptSubmit"].append(data["hooks"]["UserPromptSubmit"][0])
    s.set_json("hooks", data)
    hooks = one(s.run(), "hooks")
    assert hooks.status == WARNING and "UserPromptSubmit" in hooks.found


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini"])
def test_a_file_that_does_not_parse(harness: str) -> None:
    s = Setup(harness)
    s.texts[s.where["hooks"]] = '{"hooks": {'
    found = s.run()
    # Gemini CLI reads comments in its settings: not parsing here is no proof of a problem.
    assert [(f.check, f.status) for f in found] == [
        ("config", WARNING if harness == "gemini" else PROBLEM)
    ]
    assert "not valid JSON" in found[0].found
    s.texts[s.where["hooks"]] = doctor.UNREADABLE + "Permission denied"
    assert s.run()[0].found.endswith(
        "cannot be read (Permission denied): the harness cannot read its hooks either"
    )


# ----------------------------------------------------------------------------------------------
# Commands that do not exist: a moved virtualenv.


@pytest.mark.parametrize("harness", ["codex", "gemini"])
def test_moved_virtualenv(harness: str) -> None:
    s = Setup(harness)
    moved = PathFacts()  # nothing at the old paths any more
    found = s.run(moved)
    command = one(found, "hook-command")
    assert command.status == PROBLEM
    assert f"{HOOK[0]} (no such file)" in command.found and HOOK[2] in command.found
    assert command.fix is not None
    assert command.fix.startswith(f"{HOOK[0]} -m tmuxlocd install {harness}  (or the same from")
    assert one(found, "mcp-command").status == PROBLEM
    assert doctor.exit_status(found) == 1


def test_the_script_alone_missing() -> None:
    found = Setup("claude").run(
        PathFacts(executables=frozenset({HOOK[0]}), files=frozenset({HOOK[0]}))
    )
    command = one(found, "hook-command")
    assert command.status == PROBLEM
    assert command.found.startswith(f"{HOOK[2]} (no such file)")


def test_not_executable() -> None:
    found = Setup("claude").run(PathFacts(files=frozenset({HOOK[0], HOOK[2]})))
    assert f"{HOOK[0]} (not executable)" in one(found, "hook-command").found


def test_a_script_whose_interpreter_is_gone() -> None:
    """A moved virtualenv's console script is still there, naming the old interpreter."""
    facts = PathFacts(
        executables=ALL_THERE.executables,
        files=ALL_THERE.files,
        stale={EXE[0]: "/old/venv/bin/python3"},
    )
    command = one(Setup("gemini").run(facts), "mcp-command")
    assert command.status == PROBLEM
    assert f"{EXE[0]} (its #! interpreter /old/venv/bin/python3 does not exist)" in command.found
    assert "cannot start the MCP server" in command.found


def test_looking_at_paths(tmp_path: Path) -> None:
    stale = tmp_path / "tmuxlocd"
    stale.write_text("#!/nowhere/bin/python3\nimport tmuxlocd\n")
    fine = tmp_path / "fine"
    fine.write_text(f"#!{sys.executable} -S\n")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\x7fELF")
    script = tmp_path / "context.py"
    script.write_text("")
    for path in (stale, fine, binary):
        path.chmod(0o755)
    needs = [
        (str(stale), "exe"),
        (str(fine), "exe"),
        (str(binary), "exe"),
        (str(script), "exe"),
        (str(script), "file"),
        (str(tmp_path / "gone"), "exe"),
        ("sh", "which"),
        ("no-such-command-here", "which"),
    ]
    facts = doctor_probe.look(needs, {"PATH": "/usr/bin:/bin"})
    assert facts.executables == {str(stale), str(fine), str(binary)}
    assert facts.files == {str(stale), str(fine), str(binary), str(script)}
    assert facts.stale == {str(stale): "/nowhere/bin/python3"}
    assert facts.which["sh"] is not None and facts.which["no-such-command-here"] is None
    assert doctor_probe.read(tmp_path / "gone") is None
    (tmp_path / "latin1.json").write_bytes(b"\xff")
    unreadable = doctor_probe.read(tmp_path / "latin1.json")
    assert unreadable is not None and unreadable.startswith(doctor.UNREADABLE)


def test_a_command_by_name_depends_on_path() -> None:
    s = Setup("claude", exe=["tmuxlocd"], hook=["tmuxlocd", "context"])
    assert doctor.named_paths("claude", s.where, s.texts) == [("tmuxlocd", "which")]
    on_path = PathFacts(which={"tmuxlocd": "/usr/bin/tmuxlocd"})
    assert one(s.run(on_path), "hook-command").status == WARNING
    nowhere = PathFacts(which={"tmuxlocd": None})
    assert "tmuxlocd (not on PATH)" in one(s.run(nowhere), "hook-command").found


def test_named_paths_are_what_the_commands_start() -> None:
    s = Setup("codex")
    assert doctor.named_paths("codex", s.where, s.texts) == [
        (HOOK[0], "exe"),
        (HOOK[2], "file"),
        (EXE[0], "exe"),
    ]
    assert doctor.launch_paths("'unterminated") is None


# ----------------------------------------------------------------------------------------------
# Hooks turned off.


def test_claude_disable_all_hooks() -> None:
    s = Setup("claude")
    s.set_json("hooks", {**s.json("hooks"), "disableAllHooks": True})
    found = one(s.run(), "hooks-enabled")
    assert found.status == PROBLEM and "disableAllHooks" in (found.fix or "")


@pytest.mark.parametrize("role", ["hooks", "gemini_workspace", "gemini_system"])
def test_gemini_hooks_disabled(role: str) -> None:
    s = Setup("gemini")
    s.set_json(role, {**s.json(role), "hooksConfig": {"enabled": False}})
    found = s.run()
    off = one(found, "hooks-enabled")
    assert off.status == PROBLEM
    assert str(s.where[role]) in off.found and "Gemini CLI runs no hook" in off.found
    assert (
        off.fix
        == f'set "hooksConfig": {{"enabled": true}} in {s.where[role]} (or remove the false)'
    )
    assert doctor.exit_status(found) == 1


def test_gemini_enabled_explicitly() -> None:
    s = Setup("gemini")
    s.set_json("hooks", {**s.json("hooks"), "hooksConfig": {"enabled": True, "disabled": []}})
    assert one(s.run(), "hooks-enabled").status == OK


@pytest.mark.parametrize("name", ["tmuxlocd", f"{' '.join(HOOK)} gemini"])
def test_gemini_our_hook_in_the_disabled_list(name: str) -> None:
    s = Setup("gemini")
    s.set_json("hooks", {**s.json("hooks"), "hooksConfig": {"disabled": ["other", name]}})
    off = one(s.run(), "hooks-enabled")
    assert off.status == PROBLEM
    assert off.fix is not None and off.fix.startswith("in Gemini CLI: /hooks enable tmuxlocd")


def test_gemini_settings_with_comments_are_not_vouched_for() -> None:
    s = Setup("gemini")
    s.texts[s.where["gemini_workspace"]] = '// mine\n{"hooksConfig": {"enabled": false}}\n'
    assert status(s.run(), "hooks-enabled") == [WARNING]


@pytest.mark.parametrize("key", ["hooks", "codex_hooks"])
def test_codex_hooks_feature_off(key: str) -> None:
    s = Setup("codex")
    s.trust(CODEX_HASHES["/opt/tools/venv"])
    doc = s.toml("state")
    doc["features"] = {key: False}
    s.set_toml("state", doc)
    off = one(s.run(), "hooks-enabled")
    assert off.status == PROBLEM and f"[features] {key} = false" in off.found


# ----------------------------------------------------------------------------------------------
# Codex trust.


def test_codex_untrusted_after_install() -> None:
    found = Setup("codex").run()
    trust = one(found, "trust")
    assert trust.status == PROBLEM
    assert trust.found.startswith("trust state present for 0 of 5 installed hook commands")
    assert trust.fix is not None and "/hooks" in trust.fix and "never writes trust" in trust.fix
    assert doctor.exit_status(found) == 1


def test_codex_trusted_for_another_path() -> None:
    """Trusted, then the virtualenv moved and install ran again from the new one: the
    recorded hashes are the old commands'."""
    s = Setup("codex", exe=OLD_EXE, hook=OLD_HOOK)
    s.trust(CODEX_HASHES["/old/venv"])
    assert one(s.run(), "trust").status == OK
    s.install(EXE, HOOK)
    trust = one(s.run(), "trust")
    assert trust.status == PROBLEM
    assert "present for 5 of 5" in trust.found and "trusted for another command" in trust.found


def test_codex_a_new_floor_untrusts_too() -> None:
    s = Setup("codex")
    s.trust(CODEX_HASHES["/opt/tools/venv"])
    s.install(EXE, HOOK, floor=500)
    assert one(s.run(), "trust").status == PROBLEM


def test_codex_partly_trusted() -> None:
    s = Setup("codex")
    hashes = dict(CODEX_HASHES["/opt/tools/venv"])
    del hashes["PostToolUse"]
    s.trust(hashes)
    trust = one(s.run(), "trust")
    assert trust.status == PROBLEM
    assert "present for 4 of 5" in trust.found and "never trusted: PostToolUse" in trust.found


def test_codex_trust_keyed_by_another_hooks_file_is_not_ours() -> None:
    s = Setup("codex")
    s.trust(CODEX_HASHES["/opt/tools/venv"])
    text = s.texts[s.where["state"]] or ""
    s.texts[s.where["state"]] = text.replace(str(s.where["hooks"]), "/elsewhere/hooks.json")
    assert "present for 0 of 5" in one(s.run(), "trust").found


def test_codex_trust_key_follows_the_group_position() -> None:
    """A user's own hook before ours moves ours to group 1: the key says so."""
    s = Setup("codex")
    data = s.json("hooks")
    for event in CODEX_LABELS:
        data["hooks"][event].insert(0, {"hooks": [{"type": "command", "command": "date"}]})
    s.set_json("hooks", data)
    s.trust(CODEX_HASHES["/opt/tools/venv"], group=0)  # someone else's position
    assert one(s.run(), "trust").status == PROBLEM
    s.texts[s.where["state"]] = ""
    s.trust(CODEX_HASHES["/opt/tools/venv"], group=1)
    assert one(s.run(), "trust").status == OK


def test_codex_hook_disabled_in_its_state() -> None:
    s = Setup("codex")
    s.trust(CODEX_HASHES["/opt/tools/venv"], enabled=False)
    found = s.run()
    off = one(found, "hooks-enabled")
    assert off.status == PROBLEM and "/hooks" in (off.fix or "")
    assert doctor.exit_status(found) == 1


def test_codex_cannot_verify_is_never_trusted() -> None:
    s = Setup("codex")
    data = s.json("hooks")
    for event in CODEX_LABELS:
        data["hooks"][event][0]["hooks"][0]["once"] = True  # a field of unknown weight
    s.set_json("hooks", data)
    s.trust(CODEX_HASHES["/opt/tools/venv"])
    trust = one(s.run(), "trust")
    assert trust.status == WARNING
    assert "present for 5 of 5" in trust.found and "cannot verify" in trust.found


def test_codex_state_that_does_not_parse() -> None:
    s = Setup("codex")
    s.texts[s.where["state"]] = "[hooks.state\n"
    found = s.run()
    assert one(found, "trust").status == PROBLEM
    assert "not valid TOML" in one(found, "trust").found


def test_codex_project_trust(tmp_path: Path) -> None:
    s = Setup("codex", project=True)
    assert s.where["state"] == HOME / ".codex" / "config.toml"  # trust is the user's
    assert one(s.run(), "project-trust").status == WARNING
    s.texts[s.where["state"]] = f'[projects."{HOME}"]\ntrust_level = "trusted"\n'
    assert one(s.run(), "project-trust").status == OK
    s.texts[s.where["state"]] = f'[projects."{CWD}"]\ntrust_level = "untrusted"\n'
    assert one(s.run(), "project-trust").status == PROBLEM


# ----------------------------------------------------------------------------------------------
# The MCP entry.


@pytest.mark.parametrize("harness", ["codex", "gemini"])
def test_mcp_entry_missing(harness: str) -> None:
    s = Setup(harness)
    if harness == "codex":
        s.trust(CODEX_HASHES["/opt/tools/venv"])
        doc = s.toml("mcp")
        del doc["mcp_servers"]
        s.set_toml("mcp", doc)
    else:
        data = s.json("mcp")
        del data["mcpServers"]
        s.set_json("mcp", data)
    found = s.run()
    mcp = one(found, "mcp")
    assert mcp.status == PROBLEM
    assert mcp.found == f'no MCP server "tmux" in {s.where["mcp"]}'
    assert mcp.fix == f"{HOOK[0]} -m tmuxlocd install {harness}"
    assert "mcp-command" not in {f.check for f in found}
    assert doctor.exit_status(found) == 1


def test_mcp_entry_of_someone_else() -> None:
    s = Setup("gemini")
    s.set_json("mcp", {**s.json("mcp"), "mcpServers": {"tmux": {"command": "tmux-mcp"}}})
    mcp = one(s.run(), "mcp")
    assert mcp.status == PROBLEM and "is not tmuxlocd's" in mcp.found


def test_mcp_project_missing() -> None:
    s = Setup("claude", project=True)
    s.texts[s.where["mcp"]] = None
    assert status(s.run(), "mcp") == [PROBLEM]


def test_codex_mcp_disabled() -> None:
    s = Setup("codex")
    s.trust(CODEX_HASHES["/opt/tools/venv"])
    doc = s.toml("mcp")
    doc["mcp_servers"]["tmux"]["enabled"] = False
    s.set_toml("mcp", doc)
    assert status(s.run(), "mcp") == [PROBLEM]


def test_mcp_of_a_moved_installation() -> None:
    s = Setup("claude")
    s.texts[s.where["claude_json"]] = claude_json_with_mcp(OLD_EXE)
    command = one(s.run(), "mcp-command")
    assert command.status == PROBLEM and OLD_EXE[0] in command.found


def test_mcp_without_the_extra() -> None:
    s = Setup("gemini")
    assert status(s.run(mcp_available=False), "mcp-command") == [OK, WARNING]
    other = Setup("gemini", exe=OLD_EXE, hook=HOOK)  # another installation's server
    facts = PathFacts(
        executables=ALL_THERE.executables | {OLD_EXE[0]}, files=ALL_THERE.files | {OLD_EXE[0]}
    )
    assert status(other.run(facts, mcp_available=False), "mcp-command") == [OK]


# ----------------------------------------------------------------------------------------------
# The daemon, the caller, the report.


def test_daemon() -> None:
    assert doctor.daemon_finding("/s", 200, None).status == OK
    down = doctor.daemon_finding("/s", None, "No such file or directory")
    assert down.status == WARNING and "/s (No such file or directory)" in down.found
    assert down.fix is not None and down.fix.startswith("tmuxlocd serve")
    assert doctor.daemon_finding("/s", 503, None).status == WARNING


def test_pane() -> None:
    answer = {
        "inside_tmux": True,
        "verified_by": "tty",
        "location": {"pane": {"id": "%3"}, "session": {"name": "work"}, "window": {"index": 1}},
    }
    here = doctor.pane_finding(answer, True)
    assert here.status == OK and "pane %3 (session work, window 1), by tty" in here.found
    outside = doctor.pane_finding({"inside_tmux": False, "reason": "no_controlling_tty"}, True)
    assert outside.status == WARNING and "no_controlling_tty" in outside.found
    assert doctor.pane_finding(None, True).status == WARNING
    unknown = doctor.pane_finding(None, False)
    assert unknown.status == WARNING and unknown.found.startswith("cannot tell")


def test_report_and_exit_status() -> None:
    findings = [
        Finding("codex", "hooks", OK, f"{HOME}/.codex/hooks.json: SessionStart"),
        Finding("codex", "trust", PROBLEM, "never trusted", "open /hooks"),
        Finding(None, "daemon", WARNING, "no daemon", "tmuxlocd serve"),
    ]
    assert doctor.exit_status(findings) == 1
    assert doctor.exit_status(findings[::2]) == 0
    assert doctor.report(findings, HOME) == [
        "Codex",
        "  ok       hooks: ~/.codex/hooks.json: SessionStart",
        "  problem  trust: never trusted",
        "           fix: open /hooks",
        "tmuxlocd",
        "  warning  daemon: no daemon",
        "           fix: tmuxlocd serve",
        "verdict: 1 problem, 1 warning",
    ]
    assert doctor.report(findings, HOME, only_trouble=True)[1] == "  problem  trust: never trusted"
    assert doctor.verdict(findings[:1]) == "all is well"
    assert doctor.verdict(findings[:2]) == "1 problem"
    assert doctor.verdict(findings[::2]) == "all is well (1 warning)"
    data = json.loads(doctor.as_json(findings))
    assert data["ok"] is False and data["verdict"] == "1 problem, 1 warning"
    assert data["findings"][1] == {
        "harness": "codex",
        "check": "trust",
        "status": "problem",
        "found": "never trusted",
        "fix": "open /hooks",
    }


def test_sources() -> None:
    codex = doctor.sources("codex", False, HOME, CWD, {"CODEX_HOME": "/c"})
    assert codex == {
        "hooks": Path("/c/hooks.json"),
        "mcp": Path("/c/config.toml"),
        "state": Path("/c/config.toml"),
    }
    project = doctor.sources("codex", True, HOME, CWD, {})
    assert project["hooks"] == CWD / ".codex" / "hooks.json"
    assert project["state"] == HOME / ".codex" / "config.toml"
    gemini = doctor.sources("gemini", False, HOME, CWD, {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": "/s"})
    assert gemini["gemini_system"] == Path("/s")
    assert doctor.sources("claude", False, HOME, CWD, {})["claude_json"] == HOME / ".claude.json"
    assert doctor.harness_dir("codex", HOME, {"CODEX_HOME": "/c"}) == Path("/c")


@pytest.mark.parametrize(
    ("running", "status", "words"),
    [
        ([], "ok", "no shared app-server runs now"),
        ([(10, [(11, "/dev/pts/3")])], "ok", "TUI 11 on /dev/pts/3 connected; a session begun"),
        ([(10, [])], "ok", "no TUI connected"),
        (
            [(10, [(11, "/dev/pts/3"), (12, "/dev/pts/4")])],
            "warning",
            "2 TUIs connected (11 on /dev/pts/3, 12 on /dev/pts/4); a session begun now is told",
        ),
        ([(10, None)], "warning", "cannot be read"),
    ],
)
def test_doctor_says_whether_codex_tuis_on_a_shared_app_server_are_told_their_pane(
    running: list[tuple[int, list[tuple[int, str]] | None]], status: str, words: str
) -> None:
    found = codex.app_servers({}, Path("c.toml"), lambda: running)
    assert (found.check, found.status) == ("app-server", status)
    assert words in found.found
    assert (found.fix is not None) == (status != "ok")
    if found.fix is not None:
        assert "--own-app-server" in found.fix
    own = codex.app_servers(
        {"features": {"daemon_auto_start": False}}, Path("c.toml"), lambda: running
    )
    assert own.status == "ok" and "its own app-server" in own.found
