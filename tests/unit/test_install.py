"""``tmuxlocd install``: every harness's files, empty, existing, hand-formatted, broken."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from tmuxlocd.clients import install
from tmuxlocd.clients.install import (
    InstallError,
    add_hooks,
    add_sandbox_socket,
    allowed_sockets,
    hook_command,
    is_ours,
    plan_files,
    remove_hooks,
    remove_sandbox_socket,
    run,
    sandbox_notes,
)
from tmuxlocd.core.agents import ASKING_TOOLS
from tmuxlocd.core.harnesses import codex

EXE = ["/opt/tools/venv/bin/tmuxlocd"]
HOOK = [*EXE, "context"]
HARNESSES = ("claude", "codex", "gemini")
SOCKET = "/run/user/1000/tmuxlocd/tmuxlocd.sock"
REPO = str(Path(__file__).resolve().parents[2])


class Env:
    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.home = tmp / "home"
        self.cwd = tmp / "project"
        self.home.mkdir()
        self.cwd.mkdir()
        monkeypatch.delenv("CODEX_HOME", raising=False)
        monkeypatch.delenv("GEMINI_SANDBOX", raising=False)
        monkeypatch.setenv("TMUXLOCD_SOCKET", SOCKET)
        self.lines: list[str] = []

    def run(self, harness: str, **kw: Any) -> int:
        self.lines = []
        return run(
            harness, home=self.home, cwd=self.cwd, exe=EXE, hook=HOOK, out=self.lines.append, **kw
        )

    def files(self) -> dict[str, bytes]:
        return {
            str(p.relative_to(self.home.parent)): p.read_bytes()
            for root in (self.home, self.cwd)
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return Env(tmp_path, monkeypatch)


def hooks_of(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_text())["hooks"]
    return value


# ----------------------------------------------------------------------------------------------
# Empty: nothing there before.


def test_claude_user(env: Env) -> None:
    assert env.run("claude") == 0
    settings = env.home / ".claude" / "settings.json"
    hooks = hooks_of(settings)
    assert list(hooks) == [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        # agent state (tmuxlocd.core.agents), by the same command
        "PermissionRequest",
        "Notification",
        "Stop",
        "SessionEnd",
    ]
    cmd = f"{EXE[0]} context claude"
    entry = [{"type": "command", "command": cmd, "timeout": 10}]
    for event in hooks:
        if event == "PostToolUse":
            # The shell tool for the location, the tools that ask first for the state.
            assert hooks[event] == [
                {"matcher": "Bash", "hooks": entry},
                {"matcher": ASKING_TOOLS["claude"], "hooks": entry},
            ]
            continue
        assert hooks[event] == [{"hooks": entry}]
    # User MCP servers live in ~/.claude.json, which Claude Code rewrites: a command to run.
    assert not (env.home / ".claude.json").exists()
    assert any(f"claude mcp add --scope user tmux -- {EXE[0]} mcp" in line for line in env.lines)


def test_claude_project(env: Env) -> None:
    assert env.run("claude", project=True) == 0
    assert hooks_of(env.cwd / ".claude" / "settings.json")["UserPromptSubmit"]
    assert json.loads((env.cwd / ".mcp.json").read_text()) == {
        "mcpServers": {"tmux": {"command": EXE[0], "args": ["mcp"]}}
    }
    assert not (env.home / ".claude").exists()


def test_codex(env: Env) -> None:
    assert env.run("codex") == 0
    hooks = hooks_of(env.home / ".codex" / "hooks.json")
    assert list(hooks) == [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PermissionRequest",
        "Stop",
    ]
    assert hooks["PostToolUse"][0]["matcher"] == "Bash"
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 10  # seconds
    config = tomlkit.parse((env.home / ".codex" / "config.toml").read_text())
    assert config["mcp_servers"]["tmux"] == {
        "command": EXE[0],
        "args": ["mcp"],
        "env_vars": ["TMUX", "TMUX_PANE", "XDG_RUNTIME_DIR", "TMUXLOCD_SOCKET"],
    }
    assert any("/hooks" in line and "trust" in line for line in env.lines)


def test_codex_home(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(env.home / "elsewhere"))
    assert env.run("codex") == 0
    assert (env.home / "elsewhere" / "hooks.json").exists()


def test_gemini(env: Env) -> None:
    assert env.run("gemini") == 0
    settings = json.loads((env.home / ".gemini" / "settings.json").read_text())
    hooks = settings["hooks"]
    assert list(hooks) == [
        "SessionStart",
        "BeforeAgent",
        "AfterTool",
        "PreCompress",
        "Notification",
        "AfterAgent",
        "SessionEnd",
    ]
    assert hooks["AfterTool"][0]["matcher"] == "run_shell_command"
    entry = hooks["BeforeAgent"][0]["hooks"][0]
    assert entry == {
        "name": "tmuxlocd",
        "type": "command",
        "command": f"{EXE[0]} context gemini",
        "timeout": 10000,
    }  # milliseconds
    assert settings["mcpServers"] == {"tmux": {"command": EXE[0], "args": ["mcp"]}}


@pytest.mark.parametrize("harness", HARNESSES)
@pytest.mark.parametrize("project", [False, True])
def test_twice_then_remove(env: Env, harness: str, project: bool) -> None:
    assert env.run(harness, project=project) == 0
    after = env.files()
    assert after
    assert env.run(harness, project=project) == 0
    assert env.files() == after
    assert all(line.startswith(("unchanged:", "next:", "note:")) for line in env.lines)
    assert env.run(harness, project=project, remove=True) == 0
    assert env.files() == {}  # nothing was there before
    assert env.run(harness, project=project, remove=True) == 0
    assert env.files() == {}


def test_dry_run_writes_nothing(env: Env) -> None:
    assert env.run("codex", dry_run=True) == 0
    assert env.files() == {}
    text = "\n".join(env.lines)
    assert "+[mcp_servers.tmux]" in text and '+    "UserPromptSubmit": [' in text


def test_a_new_floor_replaces_the_hooks(env: Env) -> None:
    env.run("claude")
    env.run("claude", min_interval_ms=30000)
    hooks = hooks_of(env.home / ".claude" / "settings.json")
    assert [g["hooks"][0]["command"] for g in hooks["UserPromptSubmit"]] == [
        f"{EXE[0]} context claude --min-interval-ms 30000"
    ]


# ----------------------------------------------------------------------------------------------
# Existing files.


CLAUDE: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": "prettier --write", "timeout": 30}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
    },
}


def test_existing_entries_are_kept_and_remove_is_byte_identical(env: Env) -> None:
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    before = json.dumps(CLAUDE, indent=2) + "\n"
    settings.write_text(before)
    env.run("claude")
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["permissions"] == CLAUDE["permissions"]
    # The user's Stop hook is kept, first; ours (agent state) follows it.
    assert data["hooks"]["Stop"][: len(CLAUDE["hooks"]["Stop"])] == CLAUDE["hooks"]["Stop"]
    assert len(data["hooks"]["Stop"]) == len(CLAUDE["hooks"]["Stop"]) + 1
    assert data["hooks"]["PostToolUse"][0] == CLAUDE["hooks"]["PostToolUse"][0]
    assert data["hooks"]["PostToolUse"][1]["matcher"] == "Bash"
    assert list(data) == ["model", "permissions", "hooks"]
    env.run("claude", remove=True)
    assert settings.read_text() == before


def test_hand_formatted_json(env: Env) -> None:
    settings = env.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    tabbed = json.dumps(
        {"theme": "Dracula", "mcpServers": {"git": {"command": "git-mcp"}}}, indent="\t"
    )
    settings.write_text(tabbed)  # tabs, no final newline
    env.run("gemini")
    text = settings.read_text()
    assert text.startswith('{\n\t"theme": "Dracula",') and not text.endswith("\n")
    assert json.loads(text)["mcpServers"]["git"] == {"command": "git-mcp"}
    env.run("gemini", remove=True)
    assert settings.read_text() == tabbed

    compact = '{"theme":"Dracula",  "ui": {"hideBanner": true}}\n'
    settings.write_text(compact)
    env.run("gemini")
    assert json.loads(settings.read_text())["ui"] == {"hideBanner": True}
    env.run("gemini")  # no change the second time, whatever the layout
    second = settings.read_text()
    env.run("gemini")
    assert settings.read_text() == second
    env.run("gemini", remove=True)
    # JSON has no comments to lose; a layout that is not "indent and one key per line" comes
    # back re-indented (its content the same).
    assert json.loads(settings.read_text()) == json.loads(compact)


CODEX_TOML = """\
# Codex settings, by hand
model = "gpt-5-codex"   # the fast one
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-mcp"  # keep me
args = ["--stdio"]

[profiles.deep]
model = "o3"
"""


def test_codex_toml_keeps_comments_and_remove_is_byte_identical(env: Env) -> None:
    config = env.home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_TOML)
    env.run("codex")
    text = config.read_text()
    assert text.startswith(CODEX_TOML)
    assert tomlkit.parse(text)["mcp_servers"]["docs"]["command"] == "docs-mcp"
    env.run("codex")
    assert config.read_text() == text
    env.run("codex", remove=True)
    assert config.read_text() == CODEX_TOML


def test_codex_entry_of_ours_is_updated_in_place(env: Env) -> None:
    config = env.home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        '[mcp_servers.tmux]  # where am I\ncommand = "/old/bin/tmuxlocd"\n'
        'args = ["mcp"]\nstartup_timeout_sec = 20\n'
    )
    env.run("codex")
    doc = tomlkit.parse(config.read_text())
    assert doc["mcp_servers"]["tmux"]["command"] == EXE[0]
    assert doc["mcp_servers"]["tmux"]["startup_timeout_sec"] == 20
    assert "# where am I" in config.read_text()


def test_someone_elses_tmux_server_is_left_alone(env: Env) -> None:
    (env.cwd / ".mcp.json").write_text('{"mcpServers": {"tmux": {"command": "tmux-mcp"}}}\n')
    before = (env.cwd / ".mcp.json").read_text()
    assert env.run("claude", project=True) == 0
    assert (env.cwd / ".mcp.json").read_text() == before
    assert any(line.startswith("note:") and "left alone" in line for line in env.lines)
    env.run("claude", project=True, remove=True)
    assert (env.cwd / ".mcp.json").read_text() == before


def test_our_hook_sharing_a_group_with_others(env: Env) -> None:
    data = {
        "hooks": {
            "UserPromptSubmit": [
                {
                    "hooks": [
                        {"type": "command", "command": "date"},
                        {"type": "command", "command": "'/x/bin/tmuxlocd' context claude"},
                    ]
                }
            ]
        }
    }
    assert remove_hooks(data) == {
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}]}
    }


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (".claude/settings.json", '{"model": "opus",}'),
        (".claude/settings.json", "// comment\n{}"),
        (".claude/settings.json", "[1, 2]"),
        (".claude/settings.json", '{"hooks": []}'),
        (".claude/settings.json", '{"hooks": {"UserPromptSubmit": {}}}'),
        (".codex/config.toml", "model = \n"),
        (".codex/config.toml", 'mcp_servers = "x"\n'),
        (".codex/config.toml", 'mcp_servers = { a = { command = "b" } }\n'),
        (".codex/hooks.json", "{"),
        (".gemini/settings.json", '{"a": 1} {"b": 2}'),
    ],
)
def test_unparseable_files_are_left_untouched(env: Env, name: str, text: str) -> None:
    harness = {".claude": "claude", ".codex": "codex", ".gemini": "gemini"}[name.split("/")[0]]
    path = env.home / name
    path.parent.mkdir(parents=True)
    path.write_text(text)
    before = env.files()
    assert env.run(harness) == 1
    assert env.files() == before  # no file written, not even the other one
    assert any(str(path) in line and "left untouched" in line for line in env.lines)
    # Removing: refused too, or nothing of ours found in it.
    assert env.run(harness, remove=True) in (0, 1)
    assert env.files() == before


# ----------------------------------------------------------------------------------------------
# The pure parts.


def test_commands_are_recognised_however_quoted() -> None:
    for command in (
        "/a b/tmuxlocd context claude",
        "'/a b/tmuxlocd' context gemini",
        "tmuxlocd context codex --min-interval-ms 5",
        '"/x/tmuxlocd" context claude',
    ):
        assert is_ours(command)
    for other in (
        "tmuxlocd where",
        "mytmuxlocd context claude",
        "tmuxlocd context vim",
        "echo tmuxlocd",
        None,
        3,
    ):
        assert not is_ours(other)
    assert hook_command(["/a b/tmuxlocd", "context"], "claude", 250) == (
        "'/a b/tmuxlocd' context claude --min-interval-ms 250"
    )
    fast = hook_command(["/v/bin/python3", "-S", "/v/lib/tmuxlocd/clients/context.py"], "codex")
    assert fast == "/v/bin/python3 -S /v/lib/tmuxlocd/clients/context.py codex"
    assert is_ours(fast) and is_ours("'/a b/python' -S '/a b/tmuxlocd/clients/context.py' gemini")
    assert is_ours("/v/bin/python3 -S /v/lib/tmuxlocd/context.py codex")  # before the layers
    assert not is_ours("python3 /x/context.py codex")


def test_add_then_remove_is_the_identity_on_the_data() -> None:
    for harness in HARNESSES:
        added = add_hooks(CLAUDE, harness, hook_command(HOOK, harness))
        assert remove_hooks(added) == CLAUDE
        assert add_hooks(added, harness, hook_command(HOOK, harness)) == added


def test_install_cli_refuses_a_bad_floor(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": REPO}
    for bad in ("-1", "1.5", "soon", "99999999999"):
        proc = subprocess.run(
            [sys.executable, "-m", "tmuxlocd", "install", "claude", "--min-interval-ms", bad],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            check=False,
        )
        assert proc.returncode == 2, proc.stderr
        assert "--min-interval-ms" in proc.stderr
        assert list(tmp_path.iterdir()) == []


def test_this_installation_by_absolute_paths() -> None:
    exe = install.this_tmuxlocd()
    assert Path(exe[0]).is_absolute()
    hook = install.this_hook()
    assert hook[1] == "-S" and Path(hook[0]).is_absolute()
    assert hook[2] == str(Path(REPO) / "tmuxlocd" / "clients" / "context.py")


def test_a_moved_virtualenvs_script_is_not_this_installations_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A virtualenv moved elsewhere keeps its console scripts, whose #! names the old
    interpreter: install writes this interpreter with -m instead of one of them."""
    bin_dir = tmp_path / "moved" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.symlink_to(sys.executable)
    script = bin_dir / "tmuxlocd"
    script.write_text("#!/old/venv/bin/python\nfrom tmuxlocd.clients.cli import main\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setattr(sys, "argv", [str(script)])
    assert install.this_tmuxlocd() == [str(python), "-m", "tmuxlocd"]
    script.write_text(f"#!{python}\nfrom tmuxlocd.clients.cli import main\n")
    assert install.this_tmuxlocd() == [str(script)]
    assert install.script_interpreter(str(script)) == str(python)
    assert install.script_interpreter(sys.executable) is None  # a binary


def test_the_default_hook_replaces_an_older_form(env: Env) -> None:
    env.run("claude")
    run("claude", home=env.home, cwd=env.cwd, exe=EXE, out=env.lines.append)
    hooks = hooks_of(env.home / ".claude" / "settings.json")
    commands = [g["hooks"][0]["command"] for g in hooks["UserPromptSubmit"]]
    assert len(commands) == 1 and " -S " in commands[0]


# ----------------------------------------------------------------------------------------------
# systemd: the packaged user units.


def test_systemd_units_are_packaged_and_linked_from_the_top_level() -> None:
    from tmuxlocd.clients.install import packaged_file

    for name, top in [
        ("tmuxlocd.service", "systemd"),
        ("tmuxlocd.socket", "systemd"),
        ("tmux.conf.snippet", "hooks"),
    ]:
        assert packaged_file(name) == (Path(REPO) / top / name).read_text()


def test_systemd_install_dry_run_remove(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from tmuxlocd.clients.install import packaged_file

    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    units = env.home / ".config" / "systemd" / "user"
    assert env.run("systemd", dry_run=True) == 0
    assert not units.exists() and env.lines[-1] == "(dry run: nothing written)"
    assert any("+ExecStart=%h/.local/bin/tmuxlocd serve" in line for line in env.lines)
    assert env.run("systemd") == 0
    for name in ("tmuxlocd.service", "tmuxlocd.socket"):
        assert (units / name).read_text() == packaged_file(name)
    assert env.run("systemd") == 0
    assert sum(line.startswith("unchanged: ") for line in env.lines) == 2
    assert env.run("systemd", remove=True) == 0
    assert sorted(units.iterdir()) == []
    assert env.run("systemd", remove=True) == 0
    assert sum(line.startswith("not installed: ") for line in env.lines) == 2


def test_systemd_never_overwrites_or_removes_a_unit_that_differs(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(env.home / "cfg"))
    units = env.home / "cfg" / "systemd" / "user"
    units.mkdir(parents=True)
    mine = "[Service]\nExecStart=/opt/bin/tmuxlocd serve\n"
    (units / "tmuxlocd.service").write_text(mine)
    assert env.run("systemd") == 1
    assert (units / "tmuxlocd.service").read_text() == mine  # untouched
    assert (units / "tmuxlocd.socket").exists()  # the other one is written
    assert any("differs from the unit this tmuxlocd ships" in line for line in env.lines)
    assert any(
        line.startswith("-ExecStart=/opt/bin/tmuxlocd")
        for line in "\n".join(env.lines).splitlines()
    )
    assert env.run("systemd", remove=True) == 1
    assert (units / "tmuxlocd.service").read_text() == mine
    assert not (units / "tmuxlocd.socket").exists()


def test_systemd_has_no_project_form(env: Env) -> None:
    assert env.run("systemd", project=True) == 2


# ----------------------------------------------------------------------------------------------
# --allow-sandbox: the daemon's socket in the harness's sandbox, and nothing else.

SANDBOXED: dict[str, Any] = {
    "model": "opus",
    "sandbox": {
        "enabled": True,
        "autoAllowBashIfSandboxed": True,
        "excludedCommands": ["docker"],
        "network": {
            "allowedDomains": ["github.com"],
            "allowUnixSockets": ["/var/run/docker.sock"],
            "allowLocalBinding": False,
        },
        "filesystem": {"allowWrite": ["~/.cache"], "denyRead": ["~/.ssh"]},
    },
}


def test_the_socket_is_added_once_and_nothing_else_changes() -> None:
    after = add_sandbox_socket(SANDBOXED, SOCKET)
    assert after["sandbox"]["network"]["allowUnixSockets"] == ["/var/run/docker.sock", SOCKET]
    # Everything else is as it was: the same data once the one entry is taken out again.
    rest = json.loads(json.dumps(after))
    rest["sandbox"]["network"]["allowUnixSockets"].remove(SOCKET)
    assert rest == SANDBOXED
    assert add_sandbox_socket(after, SOCKET) == after  # idempotent
    assert remove_sandbox_socket(after, SOCKET) == SANDBOXED
    assert remove_sandbox_socket(SANDBOXED, SOCKET) == SANDBOXED  # not there: nothing to do


def test_the_daemons_socket_from_another_environment_is_replaced() -> None:
    elsewhere = "/tmp/tmuxlocd-501/tmuxlocd.sock"  # installed without XDG_RUNTIME_DIR
    other = "/var/run/docker.sock"
    data = {"sandbox": {"network": {"allowUnixSockets": [elsewhere, other]}}}
    after = add_sandbox_socket(data, SOCKET)
    assert after["sandbox"]["network"]["allowUnixSockets"] == [other, SOCKET]
    removed = remove_sandbox_socket(data, SOCKET)
    assert removed["sandbox"]["network"]["allowUnixSockets"] == [other]
    # A path of someone else's that only ends like ours stays.
    theirs = {"sandbox": {"network": {"allowUnixSockets": ["/srv/tmuxlocd.sock"]}}}
    assert remove_sandbox_socket(theirs, SOCKET) == theirs


def test_the_socket_in_empty_settings_and_out_again() -> None:
    after = add_sandbox_socket({"model": "opus"}, SOCKET)
    # Only the list: sandbox.enabled is the user's to set, and is not set.
    assert after == {"model": "opus", "sandbox": {"network": {"allowUnixSockets": [SOCKET]}}}
    assert remove_sandbox_socket(after, SOCKET) == {"model": "opus"}
    # Containers that held something else stay.
    kept = {"sandbox": {"enabled": False, "network": {"allowUnixSockets": [SOCKET]}}}
    assert remove_sandbox_socket(kept, SOCKET) == {"sandbox": {"enabled": False}}


def test_allow_all_is_never_written_nor_changed() -> None:
    data = {"sandbox": {"network": {"allowAllUnixSockets": False}}}
    after = add_sandbox_socket(data, SOCKET)
    assert after["sandbox"]["network"] == {
        "allowAllUnixSockets": False,
        "allowUnixSockets": [SOCKET],
    }
    assert remove_sandbox_socket(after, SOCKET) == data


@pytest.mark.parametrize(
    "data",
    [
        {"sandbox": True},
        {"sandbox": {"network": []}},
        {"sandbox": {"network": {"allowUnixSockets": "/tmp/x.sock"}}},
        {"sandbox": {"network": {"allowUnixSockets": [1]}}},
    ],
)
def test_a_sandbox_of_another_shape_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(InstallError, match='"sandbox'):
        add_sandbox_socket(data, SOCKET)
    with pytest.raises(InstallError, match='"sandbox'):
        remove_sandbox_socket(data, SOCKET)


def test_a_relative_socket_is_refused() -> None:
    with pytest.raises(InstallError, match="not an absolute path"):
        add_sandbox_socket({}, "tmuxlocd.sock")


def test_allowed_sockets() -> None:
    assert allowed_sockets({}) == []
    assert allowed_sockets({"sandbox": {"enabled": True}}) == []
    assert allowed_sockets(SANDBOXED) == ["/var/run/docker.sock"]


def claude_plan(text: str, **kw: Any) -> tuple[str, list[str]]:
    path = Path("/h/.claude/settings.json")
    (plan,) = plan_files("claude", {path: text}, {"hooks": path}, EXE, HOOK, socket=SOCKET, **kw)
    return plan.after, plan.notes


def test_claude_plan_allows_the_socket_only_with_the_flag() -> None:
    text = json.dumps(SANDBOXED, indent=2) + "\n"
    plain, notes = claude_plan(text, remove=False, platform="darwin")
    assert allowed_sockets(json.loads(plain)) == ["/var/run/docker.sock"]
    (offer,) = notes
    assert "--allow-sandbox" in offer and SOCKET in offer
    allowed, notes = claude_plan(text, remove=False, allow_sandbox=True, platform="darwin")
    assert allowed_sockets(json.loads(allowed)) == ["/var/run/docker.sock", SOCKET]
    assert notes == []
    # Installed: no more offer; installing again changes nothing.
    assert claude_plan(allowed, remove=False, platform="darwin") == (allowed, [])
    assert claude_plan(allowed, remove=False, allow_sandbox=True, platform="darwin")[0] == allowed
    # --remove takes it out with the hooks: the user's settings as they were, byte for byte.
    assert claude_plan(allowed, remove=True, platform="darwin") == (text, [])


def test_claude_on_linux_says_the_list_is_not_read_there() -> None:
    plain, notes = claude_plan("", remove=False, platform="linux")
    assert allowed_sockets(json.loads(plain)) == []
    assert notes == []  # no offer of what does nothing there
    allowed, notes = claude_plan("", remove=False, allow_sandbox=True, platform="linux")
    assert allowed_sockets(json.loads(allowed)) == [SOCKET]
    (note,) = notes
    assert "macOS only" in note and "allowAllUnixSockets" in note and "not written" in note
    assert "allowAllUnixSockets" not in json.loads(allowed)["sandbox"]["network"]


def test_claude_allow_all_already_set_is_named_and_left() -> None:
    text = '{"sandbox": {"network": {"allowAllUnixSockets": true}}}'
    after, notes = claude_plan(text, remove=False, platform="darwin")
    assert json.loads(after)["sandbox"] == {"network": {"allowAllUnixSockets": True}}
    # With the flag the one socket is listed too (it stays allowed if allow-all goes).
    after, notes = claude_plan(text, remove=False, allow_sandbox=True, platform="darwin")
    network = json.loads(after)["sandbox"]["network"]
    assert network == {"allowAllUnixSockets": True, "allowUnixSockets": [SOCKET]}
    (note,) = notes
    assert "allowAllUnixSockets is true" in note and "tmux's" in note


def test_claude_plan_refuses_a_malformed_sandbox_only_when_asked_to_allow() -> None:
    odd = '{"sandbox": {"network": {"allowUnixSockets": {}}}}'
    with pytest.raises(InstallError, match="left untouched"):
        claude_plan(odd, remove=False, allow_sandbox=True)
    with pytest.raises(InstallError, match="left untouched"):
        claude_plan('{"sandbox": []}', remove=False, allow_sandbox=True)
    # Without the flag the hooks go in (and come out) and the odd setting is left and named.
    for remove in (False, True):
        after, notes = claude_plan(odd, remove=remove, platform="darwin")
        assert json.loads(after)["sandbox"] == json.loads(odd)["sandbox"]
        assert ("hooks" in json.loads(after)) is not remove
        (note,) = notes
        assert "allowUnixSockets" in note and "left untouched" in note


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_codex_and_gemini_get_nothing_written_and_why(env: Env, platform: str) -> None:
    for harness in ("codex", "gemini"):
        notes = sandbox_notes(harness, SOCKET, allow=True, platform=platform)
        assert notes and notes[0].startswith("nothing written for ")
    codex = " ".join(sandbox_notes("codex", SOCKET, allow=True, platform=platform))
    assert f'"{SOCKET}" = "allow"' in codex and "network_access = true" in codex
    # Without the flag: one line, pointing at it (Gemini CLI only when it sandboxes).
    (offer,) = sandbox_notes("codex", SOCKET, allow=False, platform=platform)
    assert "--allow-sandbox" in offer
    assert sandbox_notes("gemini", SOCKET, allow=False, platform=platform, sandboxed=False) == []
    (offer,) = sandbox_notes("gemini", SOCKET, allow=False, platform=platform, sandboxed=True)
    assert "--allow-sandbox" in offer


def test_codex_and_gemini_files_are_the_same_with_the_flag(env: Env) -> None:
    for harness in ("codex", "gemini"):
        assert env.run(harness) == 0
        before = env.files()
        assert env.run(harness, allow_sandbox=True) == 0
        assert env.files() == before
        assert any(line.startswith("note: nothing written for ") for line in env.lines)


def test_gemini_offer_when_it_sandboxes(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env.run("gemini") == 0
    assert not any("--allow-sandbox" in line for line in env.lines)
    monkeypatch.setenv("GEMINI_SANDBOX", "docker")
    assert env.run("gemini") == 0
    assert any(line.startswith("note: ") and "--allow-sandbox" in line for line in env.lines)


def test_claude_allow_sandbox_then_remove(env: Env) -> None:
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(SANDBOXED, indent=2) + "\n"
    settings.write_text(original)
    assert env.run("claude", allow_sandbox=True) == 0
    data = json.loads(settings.read_text())
    assert data["sandbox"]["network"]["allowUnixSockets"] == ["/var/run/docker.sock", SOCKET]
    assert "hooks" in data
    written = settings.read_bytes()
    assert env.run("claude", allow_sandbox=True) == 0
    assert settings.read_bytes() == written
    assert env.run("claude", remove=True) == 0
    assert settings.read_text() == original


def test_claude_allow_sandbox_refused_on_a_malformed_sandbox(env: Env) -> None:
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"sandbox": {"network": {"allowUnixSockets": "/x.sock"}}}\n')
    before = env.files()
    assert env.run("claude", allow_sandbox=True) == 1
    assert env.files() == before
    assert any("allowUnixSockets" in line and "left untouched" in line for line in env.lines)


def test_claude_project_allows_in_the_local_settings(env: Env) -> None:
    shared = env.cwd / ".claude" / "settings.json"
    local = env.cwd / ".claude" / "settings.local.json"
    assert env.run("claude", project=True) == 0
    assert not local.exists()
    assert not any("settings.local.json" in line for line in env.lines)
    assert env.run("claude", project=True, allow_sandbox=True) == 0
    assert "sandbox" not in json.loads(shared.read_text())  # this machine's path: not shared
    assert json.loads(local.read_text()) == {"sandbox": {"network": {"allowUnixSockets": [SOCKET]}}}
    assert env.run("claude", project=True, remove=True) == 0
    assert env.files() == {}


def test_systemd_has_no_sandbox(env: Env) -> None:
    assert env.run("systemd", allow_sandbox=True) == 2
    assert env.files() == {}


def test_codex_next_steps_tell_of_the_shared_app_server() -> None:
    from tmuxlocd.clients import install

    steps = install.next_steps("codex", False, ["tmuxlocd"], False)
    assert codex.SHARED_SERVER in steps
    assert "daemon_auto_start = false" in codex.SHARED_SERVER
    for other in ("claude", "gemini"):
        assert codex.SHARED_SERVER not in install.next_steps(other, False, ["t"], False)
    assert codex.SHARED_SERVER not in install.next_steps("codex", False, ["t"], True)


@pytest.mark.parametrize(
    "text",
    [
        "",
        'model = "x"\n',
        'model = "x"\n\n[features]\nhooks = true\n',
        "[features]\ndaemon_auto_start = true\n",
        "# a comment\n[features]\ndaemon_auto_start = true  # mine\n[projects]\n",
    ],
)
def test_own_app_server_sets_the_feature_and_remove_puts_back_what_was_there(text: str) -> None:
    import tomlkit

    after, note = install.edit_toggle(text, "c", codex.OWN_APP_SERVER_TOGGLE, on=True, remove=False)
    assert tomlkit.parse(after)["features"]["daemon_auto_start"] is False
    assert note == codex.OWN_APP_SERVER and "trade-off" in note
    again, _ = install.edit_toggle(after, "c", codex.OWN_APP_SERVER_TOGGLE, on=True, remove=False)
    assert again == after  # idempotent
    back, _ = install.edit_toggle(after, "c", codex.OWN_APP_SERVER_TOGGLE, on=False, remove=True)
    if "mine" in text:  # tomlkit keeps the line; its comment was replaced by ours
        assert tomlkit.parse(back) == tomlkit.parse(text)
    else:
        assert back == text


def test_own_app_server_leaves_the_users_own_setting_alone() -> None:
    mine = "[features]\ndaemon_auto_start = false\n"
    assert install.edit_toggle(mine, "c", codex.OWN_APP_SERVER_TOGGLE, on=True, remove=False) == (
        mine,
        None,
    )
    assert install.edit_toggle(mine, "c", codex.OWN_APP_SERVER_TOGGLE, on=False, remove=True) == (
        mine,
        None,
    )
    # Without the flag, install changes nothing there.
    plain = 'model = "x"\n'
    assert install.edit_toggle(plain, "c", codex.OWN_APP_SERVER_TOGGLE, on=False, remove=False) == (
        plain,
        None,
    )
