"""Run a real harness with ``tmuxlocd install <harness>``'s hooks against a stub model, in a
pane of a private tmux server, and report what reached the model.

For each harness: a throwaway HOME, the stub (``stub_model.py``: OpenAI chat completions on
loopback, recording every request), ``tmuxlocd install <harness>`` run for real into that
HOME, then two runs of the harness's non-interactive mode in one pane:

1. ``hello RUNSHELL: tmux -S <socket> split-window -d``: the stub answers with one shell
   tool call that splits the harness's pane (its neighbours change), then ``done``;
2. the same session continued (``--continue`` / ``-c``) with ``again``: nothing changed.

The report lists, per model request, each ``tmux location`` block the request carried: in
which message (index and role), the pane it names and its first line.  What to expect:
the first request holds the location once, naming the harness's pane; the request after
the split holds the changed location once more (the neighbour appeared); the continued run
adds no copy of an unchanged location from a prompt (a harness that rebuilds a session
start's text may tell it again at that start: docs/harnesses.md).  With ``--check`` the
script fails unless the first request names the right pane.

No daemon: the hooks compute from tmux (``XDG_RUNTIME_DIR`` is the temp dir, so no daemon
of the user's is asked).  Everything started here is ended here: the stub by its pid, the
tmux server by its private socket.

Run from the repository root, with the harnesses installed from npm somewhere:

    python tests/tools/calibrate_harnesses.py copilot --bin <.../copilot-linux-x64/copilot>
    python tests/tools/calibrate_harnesses.py qwen --bin <.../node_modules/.bin/qwen>
    python tests/tools/calibrate_harnesses.py opencode --bin <.../node_modules/.bin/opencode>
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.tmuxtest import TmuxServer, poll  # noqa: E402


def prompt_1(socket_path: str) -> str:
    """The first prompt: a split on the private server by its socket, named outright (a
    harness may strip ``$TMUX`` from its shell tool, and plain ``tmux`` would then reach the
    user's default server)."""
    return f"hello RUNSHELL: tmux -S {shlex.quote(socket_path)} split-window -d"


PROMPT_2 = "again"
# A location block: its head and the lines of the text form after it.
BLOCK = re.compile(
    r"tmux location(?: \(turn \d+\))?:\n(?:(?:session |window active=|neighbors: )[^\n]*(?:\n|$))*"
)
PANE = re.compile(r"pane \d+ (%\d+)")


def start_stub(log: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "tools" / "stub_model.py"), str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, port


def configure(harness: str, home: Path, port: int) -> dict[str, str]:
    """The harness's provider settings (files in ``home``) and environment."""
    base = f"http://127.0.0.1:{port}/v1"
    if harness == "copilot":
        return {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": base,
            "COPILOT_PROVIDER_API_KEY": "stub",
            "COPILOT_MODEL": "stub-model",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_ALLOW_ALL": "true",
        }
    if harness == "qwen":
        settings = home / ".qwen" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(
            json.dumps(
                {"security": {"auth": {"selectedType": "openai"}}, "model": {"name": "stub-model"}}
            )
        )
        return {"OPENAI_BASE_URL": base, "OPENAI_API_KEY": "stub", "OPENAI_MODEL": "stub-model"}
    if harness == "opencode":
        config = home / ".config" / "opencode" / "opencode.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "stub",
            "options": {"baseURL": base, "apiKey": "stub"},
            "models": {"stub-model": {"name": "stub"}},
        }
        config.write_text(
            json.dumps(
                {
                    "model": "stub/stub-model",
                    "small_model": "stub/stub-model",
                    "autoupdate": False,
                    "share": "disabled",
                    "provider": {"stub": provider},
                }
            )
        )
        return {"OPENCODE_DISABLE_AUTOUPDATE": "1"}
    raise SystemExit(f"no calibration for {harness!r}")


def commands(harness: str, binary: str, socket_path: str) -> list[list[str]]:
    first = prompt_1(socket_path)
    if harness == "copilot":
        return [
            [binary, "-p", first, "--allow-all-tools"],
            [binary, "--continue", "-p", PROMPT_2, "--allow-all-tools"],
        ]
    if harness == "qwen":
        return [
            [binary, "-p", first, "--yolo"],
            [binary, "--continue", "-p", PROMPT_2, "--yolo"],
        ]
    return [[binary, "run", first], [binary, "run", "-c", PROMPT_2]]


def blocks(body: Any) -> list[tuple[int, str, str, str]]:
    """Each location block in a request: (message index, role, pane, head and size)."""
    found = []
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        parts = content if isinstance(content, list) else [content]
        for part in parts:
            text = part.get("text", "") if isinstance(part, dict) else str(part or "")
            for match in BLOCK.finditer(text):
                head = match.group(0).split("\n", 1)[0]
                pane = PANE.search(match.group(0))
                where = pane.group(1) if pane else "?"
                size = len(match.group(0).encode())
                found.append((i, str(message.get("role")), where, f"{head} ({size} bytes)"))
    return found


def requests(log: Path, skip: int = 0) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    lines = log.read_text().splitlines()[skip:]
    return [r for r in map(json.loads, lines) if str(r["path"]).endswith("/chat/completions")]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("harness", choices=("copilot", "qwen", "opencode"))
    ap.add_argument("--bin", required=True, help="the harness's executable")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the pane is right")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ns = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="tl-cal-", dir="/tmp"))
    home, work = tmp / "home", tmp / "work"
    home.mkdir()
    work.mkdir()
    log = tmp / "stub.jsonl"
    stub, port = start_stub(log)
    server = TmuxServer(tmp / "tmux")
    (tmp / "tmux").mkdir()
    ok = True
    try:
        env = configure(ns.harness, home, port)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "XDG_"))}
        base.update(HOME=str(home), XDG_RUNTIME_DIR=str(tmp), **env)
        base.pop("COPILOT_HOME", None)
        done = subprocess.run(
            [sys.executable, "-m", "tmuxlocd", "install", ns.harness],
            env=base,
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
        print(f"$ tmuxlocd install {ns.harness}  (exit {done.returncode})")
        print("\n".join("  " + line for line in done.stdout.splitlines() if line))
        version = subprocess.run(
            [ns.bin, "--version"], env=base, capture_output=True, text=True, check=False
        )
        print(f"{ns.harness} --version: {version.stdout.strip().splitlines()[:1]}")
        server.start()
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(base.items()))
        pane = server.display("main:0.0", "#{pane_id}")
        print(f"harness pane: {pane}")
        seen = 0
        checked = False
        for n, command in enumerate(commands(ns.harness, ns.bin, server.socket_path), 1):
            marker = tmp / f"run{n}.rc"
            out = tmp / f"run{n}.out"
            script = (
                f"cd {shlex.quote(str(work))} && env {exports} "
                f"{shlex.join(command)} > {shlex.quote(str(out))} 2>&1; "
                f"echo $? > {shlex.quote(str(marker))}"
            )
            server.run("send-keys", "-t", pane, script, "Enter")
            poll(marker.exists, timeout=180, what=f"run {n} of {ns.harness}")
            reqs = requests(log)
            new = reqs[seen:]
            seen = len(reqs)
            print(f"\nrun {n}: {shlex.join(command[1:])}  (exit {marker.read_text().strip()})")
            for r, req in enumerate(new, 1):
                size = len(json.dumps(req["body"]))
                system = req["body"].get("messages", [{}])[0].get("content", "")
                title = " (title generation)" if "title generator" in str(system)[:80] else ""
                print(f"  request {r}: {size} bytes{title}")
                for index, role, where, line in blocks(req["body"]):
                    print(f"    message {index} ({role}): {where}  {line}")
                if n == 1 and not title and not checked:
                    checked = True
                    named = any(b[2] == pane for b in blocks(req["body"]))
                    ok = ok and (named or not ns.check)
                    print(f"    first request names the harness's pane: {named}")
        return 0 if ok else 1
    finally:
        stub.terminate()
        stub.wait(timeout=10)
        server.kill()
        if ns.keep:
            print(f"kept: {tmp}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
