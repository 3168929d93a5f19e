"""``tmuxlocd install launchd`` (tmuxlocd.clients.launchd): the LaunchAgent as launchd.plist(5)
reads it, written, left alone when it is not ours, removed; and the doctor's advice by
platform.  What launchd then does with it is checked on a Mac (docs/macos.md)."""

from __future__ import annotations

import os
import plistlib
import stat
from pathlib import Path

import pytest

from tmuxlocd.clients import doctor
from tmuxlocd.clients.install import run
from tmuxlocd.clients.launchd import agent_path, plist_text

EXE = ["/Users/ann/.local/bin/tmuxlocd"]


def test_the_agent_says_every_path_and_is_socket_activated() -> None:
    text = plist_text(
        exe=EXE,
        socket="/Users/ann/Library/Caches/tmuxlocd/tmuxlocd.sock",
        log="/Users/ann/Library/Logs/tmuxlocd.log",
        path="/opt/homebrew/bin:/usr/bin:/bin",
    )
    agent = plistlib.loads(text.encode())
    assert agent["Label"] == "tmuxlocd"
    assert agent["ProgramArguments"] == [*EXE, "serve"]
    assert agent["EnvironmentVariables"] == {"PATH": "/opt/homebrew/bin:/usr/bin:/bin"}
    assert agent["Sockets"] == {
        "Listeners": {
            "SockPathName": "/Users/ann/Library/Caches/tmuxlocd/tmuxlocd.sock",
            "SockPathMode": 384,  # 0600, written in decimal as launchd reads it
        }
    }
    assert agent["KeepAlive"] == {"SuccessfulExit": False}  # Restart=on-failure
    assert agent["ProcessType"] == "Interactive"
    assert "RunAtLoad" not in agent  # started by its socket


def test_the_agents_path_puts_tmux_and_tmuxlocd_first(tmp_path: Path) -> None:
    bin_dir = tmp_path / "brew" / "bin"
    bin_dir.mkdir(parents=True)
    tmux = bin_dir / "tmux"
    tmux.write_text("#!/bin/sh\n")
    tmux.chmod(0o755)
    got = agent_path({"PATH": f"/nowhere:{bin_dir}:relative:/usr/bin"}, EXE).split(":")
    assert got[:3] == [str(bin_dir), "/Users/ann/.local/bin", "/nowhere"]
    assert "relative" not in got  # launchd expands nothing: absolute directories only
    assert "/bin" in got and len(got) == len(set(got))


def test_install_dry_run_remove(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMUXLOCD_SOCKET", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    lines: list[str] = []

    def install(*, dry_run: bool = False, remove: bool = False, project: bool = False) -> int:
        lines.clear()
        return run(
            "launchd",
            home=home,
            exe=EXE,
            out=lines.append,
            dry_run=dry_run,
            remove=remove,
            project=project,
        )

    plist = home / "Library" / "LaunchAgents" / "tmuxlocd.plist"
    assert install(dry_run=True) == 0
    assert not plist.exists() and lines[-1] == "(dry run: nothing written)"
    assert install() == 0
    agent = plistlib.loads(plist.read_bytes())
    socket = home / "Library" / "Caches" / "tmuxlocd" / "tmuxlocd.sock"
    assert agent["Sockets"]["Listeners"]["SockPathName"] == str(socket)
    assert stat.S_IMODE(os.stat(socket.parent).st_mode) == 0o700
    assert any(line.startswith(f"next: launchctl bootstrap gui/{os.getuid()} ") for line in lines)
    assert install() == 0 and lines[0] == f"unchanged: {plist}"
    assert install(project=True) == 2
    assert install(remove=True) == 0 and not plist.exists()
    assert any("launchctl bootout" in line for line in lines)
    assert install(remove=True) == 0 and lines[0] == f"not installed: {plist}"


def test_a_plist_that_is_not_ours_is_left_alone(tmp_path: Path) -> None:
    plist = tmp_path / "Library" / "LaunchAgents" / "tmuxlocd.plist"
    plist.parent.mkdir(parents=True)
    theirs = plistlib.dumps({"Label": "com.example.other"}).decode()
    plist.write_text(theirs)
    lines: list[str] = []
    for remove in (False, True):
        assert run("launchd", home=tmp_path, exe=EXE, out=lines.append, remove=remove) == 1
        assert plist.read_text() == theirs


def test_the_doctor_advises_the_systems_service_manager() -> None:
    assert "install launchd" in doctor.service_advice("darwin")
    assert "launchctl bootstrap" in doctor.service_advice("darwin")
    assert "install systemd" in doctor.service_advice("linux")
