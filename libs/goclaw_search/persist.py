"""Saving and loading a :class:`goclaw_search.index.SearchIndex`: one folder
holding ``meta.json``, ``vocab.txt`` and one ``.npy`` per array, memory-mapped on load.

What is loaded is verified, never trusted: ``meta.json`` carries the size and digest (xxh3-64)
of every other file and a CRC-32 of its own content, all checked on load, so a truncated, flipped or
hand-edited file (two users' scope numbers swapped in ``meta.json``) is refused with
``ValueError`` and its owner rebuilds the index from its source of truth. A CRC catches damage
and edits, not a forger: whoever can write the folder can also write what the index is built
from. A save is atomic and durable: files written into a temporary folder named after the
saving process (``<name>.<pid>.<random>.tmp``), each fsync'ed, then renamed into place and the
parent folder fsync'ed; a save killed part-way leaves the previous index (or none) and that
temporary folder, which the pid in its name lets the owner recognise as dead and delete."""

from __future__ import annotations

import json
import mmap
import os
import shutil
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import xxhash

from goclaw_search.forward import ForwardIndex
from goclaw_search.passage_sketches import PassageSketches
from goclaw_search.vocab_table import SavedVocab

if TYPE_CHECKING:
    from goclaw_search.index_write import IndexWrites

# The index's class (SearchIndex, which imports this module; its write side suffices here).
Index = TypeVar("Index", bound="IndexWrites")

# 2: the forward index (fwd_terms, fwd_ptr); 3: the passage sketches (psk_*); 4: the int8 copy
# of the vectors (q8, q8s, q8e: goclaw_search.vecq); 5: centred (q8n, q8mu); 6: each slot's
# location (loc_path: a code in paths.json, loc_start, loc_end); 7: checksums (meta "files" and
# "check"), verified on load; 8: the files' digests are xxh3-64 (format 7's CRC-32 took 3-5x as long
# to verify: ~65 against ~20 ms for 100k chunks); a format 7 index still loads, verified by CRC-32;
# and the vocabulary's hash table (vocab_hash, vocab_order: goclaw_search.vocab_table)
FORMAT = 8  # the per-slot arrays saved are IndexSlots._ARRAYS
CHECKED = 7  # from this format on, an index without valid checksums is refused
QUANTIZED = ("q8", "q8s", "q8e", "q8n")  # absent from a format 3 index, recomputed from a format 4 one
LOCATED = ("loc_path", "loc_start", "loc_end")  # absent before format 6: unknown (-1) until filled


def _mapped(path: Path) -> Any:
    """The array in ``path`` memory-mapped copy-on-write, as a plain ``ndarray`` view: the
    ``memmap`` subclass costs Python work on every slice (≈40 slices per search)."""
    return np.load(path, mmap_mode="c").view(np.ndarray)


def save_index(index: IndexWrites, path: Path) -> None:
    """Write the whole index to the folder ``path``: ``meta.json``, ``vocab.txt`` and one
    ``.npy`` per array (memory-mapped on load). Written to a temporary folder first and
    renamed into place, so a reader never sees half an index; a crash between the two
    renames leaves no index, which only costs the next start a rebuild."""
    if index._segments:
        index._consolidate()
    meta = dict(index.meta)
    meta.update(
        format=FORMAT,
        dim=index.dim,
        n=index.n,
        n_alive=index.n_alive,
        total_len=index.total_len,
        scopes=index.scopes,
    )
    n = index.n
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent))
    old = path.with_name(f"{path.name}.{os.getpid()}.old")
    try:
        for name in index._ARRAYS:
            np.save(tmp / f"{name}.npy", getattr(index, name)[:n])
        np.save(tmp / "indptr.npy", index._indptr)
        np.save(tmp / "slots.npy", index._slots)
        np.save(tmp / "tf.npy", index._tf)
        np.save(tmp / "q8mu.npy", index.q8mu)
        for name, arr in (*index.fwd.arrays().items(), *index.psk.arrays().items()):
            np.save(tmp / f"{name}.npy", arr)
        (tmp / "paths.json").write_text(json.dumps(list(index.paths)), encoding="utf-8")
        saved = index._saved_vocab if index._vocab is None else None  # loaded, never built
        if saved is None:
            saved = SavedVocab.of("\n".join(index.vocab).encode("utf-8"))
        (tmp / "vocab.txt").write_bytes(saved.raw)
        np.save(tmp / "vocab_hash.npy", saved.hashes)
        np.save(tmp / "vocab_order.npy", saved.order)
        meta["files"] = {f.name: _sum_and_sync(f) for f in sorted(tmp.iterdir())}
        meta["check"] = _meta_check(meta)
        _write_synced(tmp / "meta.json", json.dumps(meta).encode("utf-8"))  # written last
        _sync_dir(tmp)
        if path.exists():
            os.replace(path, old)
        os.replace(tmp, path)
        _sync_dir(path.parent)  # the rename itself survives a power cut
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:  # also when the second rename failed: the index moved aside must not outlive it
        shutil.rmtree(old, ignore_errors=True)


def load_index(cls: type[Index], path: Path) -> Index:
    """Read an index written by :func:`save_index` into a new ``cls`` (raises ``ValueError``
    if it is not one). The arrays are memory-mapped copy-on-write: loading 100k chunks takes
    milliseconds and the pages are read on first use.

    A format 3 or 4 index (saved before the centred int8 copy of the vectors) still loads: its
    vectors are quantized here, in memory, once per load (~1 ms per 1,000 rows of 256
    dimensions with the compiled kernels, :func:`goclaw_search.vecq.quantize`); the next
    :func:`save_index` writes the current format, which loads without that pass. An index
    saved before format 6 has no locations: it loads with every code -1 and ``located``
    False, and its owner fills them (:meth:`SearchIndex.set_locations`; the memory backends
    read them from the chunk table, one query without the text) or searches without them. A
    format 6 index with a live slot's code -1 (loaded from an older format and saved before
    they were filled) loads with ``located`` False too; a code below -1 or past the path table
    is damage, refused like a short array (the memory backends rebuild it from the table)."""
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("meta.json is not an object")
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a search index ({exc})") from None
    fmt = meta.get("format")
    old = fmt in (3, 4)
    unlocated = fmt in (3, 4, 5)
    if fmt not in (FORMAT, 7, 6) and not unlocated:
        raise ValueError(f"{path}: unsupported index format {meta.get('format')!r}")
    if isinstance(fmt, int) and fmt >= CHECKED:
        verify(path, meta)
    return _read(cls, path, meta, old=old, unlocated=unlocated)


def _read(cls: type[Index], path: Path, meta: dict[str, Any], *, old: bool, unlocated: bool) -> Index:
    """The body of :func:`load_index` once ``meta.json`` is read and verified: the arrays
    mapped, the vocabulary, paths and scopes parsed, and their sizes checked against each other."""
    idx = cls(int(meta["dim"]), meta=dict(meta))
    raw = (path / "vocab.txt").read_bytes()
    n_terms = raw.count(b"\n") + 1 if raw else 0
    if "vocab_hash.npy" in meta.get("files", ()):  # the saved table: the dict is built on first need
        table = SavedVocab(raw, _mapped(path / "vocab_hash.npy"), _mapped(path / "vocab_order.npy"))
        if (
            len(table.hashes) != n_terms
            or table.order.shape != (n_terms,)
            or (n_terms and not (int(table.order.min()) >= 0 and int(table.order.max()) < n_terms))
        ):
            raise ValueError(f"{path}: inconsistent index file (vocabulary table)")
        idx._vocab, idx._saved_vocab = None, table
    else:
        words = raw.decode("utf-8").split("\n") if raw else []
        idx.vocab.update(zip(words, range(len(words)), strict=True))  # the index's own Vocab type
    idx.n = int(meta["n"])
    for name in cls._ARRAYS:
        if not (old and name in QUANTIZED) and not (unlocated and name in LOCATED):
            setattr(idx, name, _mapped(path / f"{name}.npy"))
    if unlocated:
        idx.loc_path = np.full(idx.n, -1, dtype=np.int32)
        idx.loc_start, idx.loc_end = np.zeros(idx.n, dtype=np.int32), np.zeros(idx.n, dtype=np.int32)
        idx.located = not bool(np.any(idx.alive))
    else:
        idx.paths = [str(p) for p in json.loads((path / "paths.json").read_text(encoding="utf-8"))]
    if old:
        idx.q8 = np.zeros((idx.n, idx.dim), dtype=np.int8)
        idx.q8s, idx.q8e, idx.q8n = (np.zeros(idx.n, dtype=np.float32) for _ in range(3))
        idx._quantize(0, idx.n)  # the centre: the mean of every row with a vector
    else:
        idx.q8mu = np.load(path / "q8mu.npy")
    idx._indptr = _mapped(path / "indptr.npy")
    idx._slots = _mapped(path / "slots.npy")
    idx._tf = _mapped(path / "tf.npy")
    idx.fwd = ForwardIndex.from_arrays(_mapped(path / "fwd_terms.npy"), _mapped(path / "fwd_ptr.npy"))
    idx.psk = PassageSketches.from_arrays({k: _mapped(path / f"{k}.npy") for k in PassageSketches().arrays()})
    if (
        len(idx._indptr) != idx.n_terms + 1
        or len(idx.ids) != idx.n
        or idx.q8.shape != idx.vec.shape
        or len(idx.q8s) != idx.n
        or len(idx.q8e) != idx.n
        or len(idx.q8n) != idx.n
        or idx.q8mu.shape != (idx.dim,)
        or idx.fwd.slots != idx.n
        or idx.psk.slots != idx.n
        or any(len(getattr(idx, name)) != idx.n for name in LOCATED)
        or (idx.n and int(idx.loc_path.max(initial=-1)) >= len(idx.paths))
        or (idx.n and int(idx.loc_path.min(initial=-1)) < -1)
    ):
        raise ValueError(f"{path}: inconsistent index file")
    if idx.n and (not np.isfinite(idx.q8mu).all() or not np.isfinite(idx.q8e[: idx.n]).all()):
        # A vector with a NaN or an infinity, kept as such before upserts refused them (a zero
        # row now): it made the int8 copies' centre or that row's bound non-finite, which no
        # search can use. The caller rebuilds the index from its table.
        raise ValueError(f"{path}: holds a vector that is not finite (saved by an older version)")
    if not unlocated:
        idx.located = not bool(np.any(idx.alive[: idx.n] & (idx.loc_path < 0)))
    idx.scopes = {str(k): int(v) for k, v in meta["scopes"].items()}
    codes = sorted(idx.scopes.values())
    if codes != list(range(len(codes))) or (idx.n and int(idx.scope[: idx.n].max(initial=0)) >= len(codes)):
        raise ValueError(f"{path}: inconsistent index file (scope numbers)")
    idx.n_alive = int(meta["n_alive"])
    idx.total_len = float(meta["total_len"])
    live = np.flatnonzero(idx.alive)
    idx.slot_of = dict(zip(idx.ids[live].tolist(), live.tolist(), strict=True))
    return idx


def verify(path: Path, meta: dict[str, Any]) -> None:
    """Check a saved index's ``meta.json`` (its own CRC) and every file it lists (size and
    digest); ``ValueError`` naming the first mismatch. Reads every file once (~20 ms per
    100k chunks when cached; the pages stay cached for the memory maps)."""
    files = meta.get("files")
    if meta.get("check") != _meta_check(meta) or not isinstance(files, dict):
        raise ValueError(f"{path}: meta.json does not match its checksum (damaged or edited)")
    present = {p.name for p in path.iterdir()} - {"meta.json"}
    if present != set(files):
        raise ValueError(f"{path}: files differ from those saved ({sorted(present ^ set(files))})")
    digest = zlib.crc32 if meta.get("format") == 7 else _xxh3
    for name, want in files.items():
        try:
            got = _sum_and_sync(path / name, sync=False, digest=digest)
        except OSError as exc:
            raise ValueError(f"{path}: {name} unreadable ({exc})") from None
        if got != want:
            raise ValueError(f"{path}: {name} does not match its checksum (damaged or edited)")


def _meta_check(meta: dict[str, Any]) -> int:
    body = {k: v for k, v in meta.items() if k != "check"}
    return zlib.crc32(json.dumps(body, sort_keys=True).encode("utf-8"))


def _xxh3(data: Any) -> int:
    return int(xxhash.xxh3_64_intdigest(data))


def _sum_and_sync(file: Path, *, sync: bool = True, digest: Callable[[Any], int] = _xxh3) -> list[int]:
    """``[size, digest]`` of ``file``, fsync'ed when ``sync``. The digest runs over a read-only
    memory map of the file, its pages mapped in one call where the system can (Linux's
    ``MAP_POPULATE``): no copy through Python buffers and no page fault per page, half the
    time of either at 100k chunks."""
    with open(file, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        value = 0
        if size:
            with _read_map(fh.fileno()) as view:
                value = digest(view)
        if sync:
            os.fsync(fh.fileno())
    return [size, value]


def _read_map(fd: int) -> mmap.mmap:
    if hasattr(mmap, "MAP_POPULATE"):
        return mmap.mmap(fd, 0, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE, prot=mmap.PROT_READ)
    return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)


def _write_synced(file: Path, data: bytes) -> None:
    with open(file, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _sync_dir(folder: Path) -> None:
    """fsync a folder (its entries: a rename into it); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on a folder
        pass
    finally:
        os.close(fd)
