"""goclaw.fsutil.atomic_write_text: whole files only, permissions kept, nothing left behind."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from goclaw.fsutil import atomic_write_text


def test_concurrent_writers_leave_one_whole_file_and_no_temp_files(tmp_path: Path) -> None:
    """Threads of one process writing the same file: every write succeeds, the file is one of
    the texts whole, and no temp file is left (a pid-named temp file is shared by threads: one
    writer's replace removes it under another, which then fails or publishes a mix)."""
    target = tmp_path / "notes" / "MEMORY.md"
    texts = [f"writer {i}\n" + ("x" * 20_000) + f"\nend {i}\n" for i in range(8)]
    errors: list[BaseException] = []

    def write(text: str) -> None:
        try:
            for _ in range(25):
                atomic_write_text(target, text)
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert target.read_text(encoding="utf-8") in texts
    assert sorted(p.name for p in target.parent.iterdir()) == ["MEMORY.md"]


def test_permissions_are_kept_or_set(tmp_path: Path) -> None:
    target = tmp_path / "a.md"
    target.write_text("old", encoding="utf-8")
    os.chmod(target, 0o640)
    atomic_write_text(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    secret = tmp_path / "tokens.json"
    atomic_write_text(secret, "{}", mode=0o600)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    fresh = tmp_path / "fresh.md"
    atomic_write_text(fresh, "x")
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask


def test_a_failed_write_keeps_the_old_file_and_removes_the_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "a.md"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(target, "bad \udc80 surrogate")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.md"]


def test_newlines_are_written_as_given(tmp_path: Path) -> None:
    target = tmp_path / "a.md"
    atomic_write_text(target, "one\r\ntwo\n")
    assert target.read_bytes() == b"one\r\ntwo\n"


def test_a_failure_before_writing_closes_the_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Setting the temp file's permissions can fail (a file system without them): the error
    reaches the caller, and neither the temp file nor its descriptor is left behind."""
    target = tmp_path / "MEMORY.md"
    target.write_text("old\n", encoding="utf-8")

    def refuse(fd: int, mode: int) -> None:
        raise PermissionError("operation not permitted")

    monkeypatch.setattr(os, "fchmod", refuse)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        with pytest.raises(PermissionError):
            atomic_write_text(target, "new\n")
    assert len(os.listdir("/proc/self/fd")) == before
    assert target.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MEMORY.md"]
