"""Building C into a shared library in p4switch's cache directory: what the native back end
(`p4switch.native`) and the native I/O loop (`p4switch.nativeio`) share.

The cache is `$P4SWITCH_CACHE`, else `$XDG_CACHE_HOME/p4switch`, else `~/.cache/p4switch`.
Callers name each library after a hash of everything that went into it (sources, flags, the
compiler's version), so a changed input builds anew and an unchanged one loads as it is. The
compiler writes a temporary file that is renamed into place, so two processes building at once
never load half a library; the sources stay beside it, so a failed build can be read and
repeated by hand.

    >>> cache_dir({"P4SWITCH_CACHE": "/var/cache/sw"})
    PosixPath('/var/cache/sw')
    >>> cache_dir({"XDG_CACHE_HOME": "/tmp/xdg"})
    PosixPath('/tmp/xdg/p4switch')
    >>> first_error("loop.c: In function 'f':\\nloop.c:3:5: error: 'x' undeclared\\n")
    "loop.c:3:5: error: 'x' undeclared"
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from p4switch.exceptions import P4SwitchError

COMPILER = "gcc"
BUILD_TIMEOUT_S = 120.0  # innet.p4 builds in a few seconds; this bounds a pathological program


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$P4SWITCH_CACHE`, else `$XDG_CACHE_HOME/p4switch`, else `~/.cache/p4switch`."""
    env = os.environ if environ is None else environ
    if env.get("P4SWITCH_CACHE"):
        return Path(env["P4SWITCH_CACHE"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "p4switch"
    return Path.home() / ".cache" / "p4switch"


def compiler() -> str | None:
    """The C compiler's path, None when it is not on PATH."""
    return shutil.which(COMPILER)


@functools.cache
def compiler_version(path: str) -> str:
    """The compiler's first `--version` line (part of every cache key)."""
    done = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.splitlines()[0] if done.stdout else ""


def first_error(stderr: str) -> str:
    """The compiler's first error line (or its first line at all), for a one-line message."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if "error" in line:
            return line
    return lines[0] if lines else "no message"


def write_atomically(path: Path, data: bytes) -> None:
    """`data` at `path`, never seen half-written (a temporary file renamed into place)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def compile_library(
    c_files: Sequence[Path],
    library: Path,
    flags: Sequence[str],
    error: type[P4SwitchError],
    what: str,
    libs: Sequence[str] = (),
) -> None:
    """Compile `c_files` into `library` (renamed into place once whole); `error` naming
    `what`, where the sources were kept and the first compiler error, when it fails."""
    gcc = compiler()
    if gcc is None:
        raise error(f"cannot build {what}: no C compiler ({COMPILER}) on PATH (install gcc)")
    fd, tmp = tempfile.mkstemp(dir=library.parent, prefix=f".{library.name}-")
    os.close(fd)
    kept = ", ".join(str(f) for f in c_files)
    try:
        argv = [gcc, *flags, "-o", tmp, *map(str, c_files), *libs]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            raise error(
                f"building {what} failed ({kept} kept for inspection): {first_error(done.stderr)}"
            )
        os.replace(tmp, library)
    except subprocess.TimeoutExpired:
        raise error(f"building {what} took over {BUILD_TIMEOUT_S:.0f} s ({kept} kept)") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
