"""Atomic file writes: a reader sees the old file or the new one, never a torn one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_text"]


def _read_umask() -> int:
    mask = os.umask(0o022)  # read once, at import (setting it is process-wide)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


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
                    os.fchmod(fd, 0o666 & ~_UMASK)
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
