"""The manual's examples, run: every shell example of README.md and docs/ that can run on a
private tmux server runs in a pane of one (a neighbour to its right, a daemon answering, a
throwaway HOME), and its output is compared with the page's where the page shows one.  The
ones that cannot run here say why on the page (``tests/docs/markdown.py``); every relative
link of the pages leads to a file, and every anchor to a heading.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
from pathlib import Path

import pytest

from tests.daemontest import Daemon, private_rig
from tests.docs.markdown import ROOT, Example, anchors, examples, links, pages, shape
from tests.tmuxtest import TMUX, poll

ALL = [e for page in pages() for e in examples(page)]
RUN = [e for e in ALL if e.run]
BIN = str(Path(sys.executable).parent)


def test_every_example_says_whether_it_runs() -> None:
    unmarked = [e.ident for e in ALL if not e.marked]
    assert not unmarked, (
        "mark each with <!-- example: run --> or <!-- example: not run: why -->: "
        + ", ".join(unmarked)
    )
    assert all(e.why for e in ALL if not e.run), [e.ident for e in ALL if not e.run and not e.why]
    # What the README's readers see first is run.
    assert any(e.page == "README.md" and e.output for e in RUN)


def test_links_lead_somewhere() -> None:
    broken = []
    for page in pages():
        for line, target in links(page):
            path, _, fragment = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}:{line}: {target}")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}:{line}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_shape_of_an_output_takes_ids_and_names_as_any() -> None:
    page = 'session work, window 1 "editor", pane 0 %3\nlayout 4c30,158x40,0,0{79x40,0,0,3}\n'
    run = 'session main, window 3 "sh", pane 0 %12\nlayout b25d,80x24,0,0{40x24,0,0,12}\n'
    assert shape(page) == shape(run)
    assert shape("neighbors: right %4\n") != shape("neighbors: right none\n")


def _ours(root: Path) -> list[int]:
    """This user's processes started under this rig (its TMUX_TMPDIR in their environment):
    what an example left running, such as a daemon it started with ``&``."""
    mark = f"TMUX_TMPDIR={root}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(TMUX is None or shutil.which("curl") is None, reason="needs tmux and curl")
@pytest.mark.parametrize("example", RUN, ids=[e.ident for e in RUN])
def test_example(example: Example) -> None:
    with private_rig(start=True) as rig:
        home = rig.root / "home"
        home.mkdir()
        out, err, rc = (rig.root / f"example.{x}" for x in ("out", "err", "rc"))
        exports = {
            "HOME": str(home),
            "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "TMUXLOCD_SOCKET": rig.daemon_socket,
            "S": rig.daemon_socket,
            "TMUX_TMPDIR": str(rig.root),
            "XDG_CONFIG_HOME": str(rig.root / "config"),
        }
        script = rig.root / "example.sh"
        script.write_text(
            "".join(f"export {k}={shlex.quote(v)}\n" for k, v in exports.items())
            + f"cd {shlex.quote(str(home))}\n"
            + example.commands()
        )
        daemon = None if "tmuxlocd serve" in example.text else Daemon(rig).wait_ready()
        try:
            gate = "example-go"
            command = (
                f"{shlex.join(rig.tmux.argv('wait-for', gate))}; "
                f"sh {shlex.quote(str(script))} >{out} 2>{err}; "
                f"echo $? >{rc}.tmp; mv {rc}.tmp {rc}; sleep 600"
            )
            pane = rig.tmux.run("new-window", "-d", "-P", "-F", "#{pane_id}", command).strip()
            rig.tmux.run("split-window", "-h", "-d", "-t", pane, "sleep 600")
            rig.sync()
            rig.tmux.run("wait-for", "-S", gate)
            poll(rc.exists, 60, f"{example.ident} to finish")
        finally:
            if daemon is not None:
                daemon.stop()
            for pid in _ours(rig.root):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        printed, said = out.read_text(), err.read_text()
        detail = f"{example.ident}\n--- stdout\n{printed}--- stderr\n{said}"
        for bad in ("Traceback", "usage:", "error: argument", "not found"):
            assert bad not in said, detail
        assert int(rc.read_text()) != 127, detail
        if example.output is not None:
            assert shape(printed) == shape(example.output), detail
