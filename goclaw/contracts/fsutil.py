"""Atomic file writes: a reader sees the old file or the new one, never a torn one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_text", "current_umask"]


_STATUS = "/proc/self/status"  # Linux 4.7+: "Umask:\t0022"


def _proc_umask() -> int | None:
    """The process umask as the kernel reports it, without setting it; ``None`` where the
    system has no such line (older kernels, macOS, BSD)."""
    try:
        with open(_STATUS, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _set_and_restore_umask() -> int:
    # The only portable way to read the umask is to set it, which is process-wide: a file
    # another thread creates in between gets this mask. Used only where /proc has no Umask
    # line, and then once, at import (before a program normally starts threads).
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FALLBACK_UMASK = None if _proc_umask() is not None else _set_and_restore_umask()


def current_umask() -> int:
    """The process umask now (read from /proc, so a change after import counts); where the
    system cannot report it, the one it had when this module was imported."""
    mask = _proc_umask()
    if mask is not None:
        return mask
    return _FALLBACK_UMASK if _FALLBACK_UMASK is not None else _set_and_restore_umask()


def atomic_write_text(path: Path | str, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` atomically: a uniquely named temp
    file in the same folder, flushed to disk, then ``os.replace``; the temp file is removed if
    anything fails. ``mode`` sets the new file's permissions (e.g. ``0o600`` for secrets),
    otherwise an existing file keeps its own and a new one gets ``open()``'s default
    (``0o666`` less the umask). Safe from several threads and processes at once (the last replace wins)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            else:
                try:
                    os.fchmod(fd, target.stat().st_mode & 0o7777)
                except FileNotFoundError:
                    os.fchmod(fd, 0o666 & ~current_umask())
            fh = os.fdopen(fd, "w", encoding="utf-8", newline="")
        except BaseException:
            os.close(fd)  # not yet owned by a file object
            raise
        with fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
