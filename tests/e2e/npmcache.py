"""Pinned harness packages from the npm registry, installed once into a cache outside the
clone: ``${XDG_CACHE_HOME:-$HOME/.cache}/tmuxlocd/harnesses/<package>@<version>/``.

An install is complete when its marker file is there (written last); concurrent test runs
take a lock file beside the prefix, so a second run waits for the first instead of racing
npm in the same directory.  Without npm, or without the registry, the e2e tests are skipped
with the reason: they test the real programs, and there is nothing to test without them.

``python -m tests.e2e.npmcache <package>@<version> ...`` installs ahead of a test run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MARKER = ".tmuxlocd-installed"
PROBE_TIMEOUT = 30.0  # seconds for `npm view`: the registry answers in about one
INSTALL_TIMEOUT = 600.0


class Unavailable(Exception):
    """npm or the registry cannot be reached: a reason to skip, not a failure."""


def cache_root(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME", "~"), ".cache")
    return Path(os.path.expanduser(base)) / "tmuxlocd" / "harnesses"


def prefix_of(package: str, version: str) -> Path:
    return cache_root() / f"{package}@{version}"


def installed(package: str, version: str) -> bool:
    marker = prefix_of(package, version) / MARKER
    try:
        return marker.read_text().strip() == f"{package}@{version}"
    except OSError:
        return False


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise Unavailable("npm and node are needed to install the harnesses (not on PATH)")
    return npm


def probe(package: str, version: str) -> None:
    """Raise Unavailable unless the registry answers for ``package@version``."""
    npm = _npm()
    try:
        proc = subprocess.run(
            [npm, "view", f"{package}@{version}", "version"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise Unavailable(f"the npm registry did not answer within {PROBE_TIMEOUT:.0f} s") from None
    if proc.returncode != 0 or proc.stdout.strip() != version:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise Unavailable(f"npm view {package}@{version} failed: {tail}")


def install(package: str, version: str) -> Path:
    """The install prefix of ``package@version``, installed if it was not; raises
    Unavailable when npm or the registry is missing, RuntimeError when npm fails."""
    prefix = prefix_of(package, version)
    if installed(package, version):
        return prefix
    prefix.parent.mkdir(parents=True, exist_ok=True)
    lock_path = prefix.parent / f"{prefix.name}.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run installing the same: wait for it
        if installed(package, version):
            return prefix
        probe(package, version)
        prefix.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                _npm(),
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--no-save",
                f"{package}@{version}",
            ],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"npm install {package}@{version} failed:\n{proc.stderr[-4000:]}")
        (prefix / MARKER).write_text(f"{package}@{version}\n")
    return prefix


def ensure(package: str, version: str) -> Path:
    """``install`` for a test: skipped, with the reason, when npm or the registry is
    missing."""
    try:
        return install(package, version)
    except Unavailable as exc:
        pytest.skip(f"{package}@{version}: {exc}")


def bin_path(prefix: Path, *parts: str) -> Path:
    """A file under the prefix's ``node_modules``: ``bin_path(p, ".bin", "gemini")``, or a
    platform package's native binary (``bin_path(p, "@anthropic-ai", "claude-code-linux-x64",
    "claude")``); fails when the install does not have it."""
    path = prefix.joinpath("node_modules", *parts)
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{path}: not in the install of {prefix.name}")
    return path


def main(argv: list[str]) -> int:
    for spec in argv:
        package, _, version = spec.rpartition("@")
        try:
            print(install(package, version))
        except Unavailable as exc:
            print(f"{spec}: {exc}", file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
