"""goclaw.contracts.fsutil.atomic_write_text: whole files only, permissions kept, nothing left behind."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from goclaw.contracts.fsutil import atomic_write_text


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


def test_the_umask_is_read_without_setting_it_and_a_later_change_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the umask by setting it (os.umask is process-wide) gives a file that another
    thread creates at that instant the wrong mode; on Linux it is read from /proc instead, never
    set, and read when the file is written, so a umask the program sets after import counts."""
    import importlib

    import goclaw.contracts.fsutil as fsutil

    calls: list[int] = []
    real_umask = os.umask

    def spy(mask: int) -> int:
        calls.append(mask)
        return real_umask(mask)

    if not Path("/proc/self/status").read_text(encoding="ascii", errors="replace").count("Umask:"):
        pytest.skip("this kernel reports no Umask in /proc/self/status")
    previous = real_umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", spy)
        fresh = importlib.reload(fsutil)
        fresh.atomic_write_text(tmp_path / "new.md", "x")
        assert calls == []  # neither at import nor at the write
    finally:
        real_umask(previous)
        monkeypatch.undo()
        importlib.reload(fsutil)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640
    # Set after import: the mode follows the umask of the moment.
    previous = real_umask(0o077)
    try:
        atomic_write_text(tmp_path / "later.md", "x")
    finally:
        real_umask(previous)
    assert stat.S_IMODE((tmp_path / "later.md").stat().st_mode) == 0o600


def test_without_proc_the_umask_is_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the kernel reports no umask (macOS, BSD, old Linux) it falls back to os.umask."""
    import goclaw.contracts.fsutil as fsutil

    monkeypatch.setattr(fsutil, "_STATUS", "/nonexistent/status")
    assert fsutil._proc_umask() is None
    previous = os.umask(0o027)
    try:
        assert fsutil.current_umask() == 0o027
        assert os.umask(0o027) == 0o027  # left as it was
    finally:
        os.umask(previous)
