"""Whether two stores hold the same index: the same files with the same segments and, within a
tolerance, the same vectors. Row ids, timestamps of the indexing and the order files were written in
are not compared (a cluster writes files in the order its workers finish them).

``store_differences(a, b)`` lists what differs, naming the file and the field; empty means equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hippocamp.store.db import Store

__all__ = ["store_differences"]

#: file fields compared (``id`` and the time of indexing are not)
FILE_FIELDS = ("path", "size", "mtime_ns", "sha256", "modality", "type", "created", "modified", "status", "reader",
               "signature", "reason", "notes", "segments")  # fmt: skip
SEGMENT_FIELDS = "modality, text, locator, within, meta, ordinal, time"
META_KEYS = ("schema_version", "root", "embedder", "embedder_name", "chunker")


def _files(store: Store) -> dict[str, tuple[Any, ...]]:
    rows = store.db.execute(f"SELECT {', '.join(FILE_FIELDS)}, id FROM files").fetchall()
    return {r[0]: r for r in rows}


def _segments(store: Store, file_id: int) -> list[tuple[Any, ...]]:
    return store.db.execute(
        f"SELECT {SEGMENT_FIELDS} FROM segments WHERE file_id = ? ORDER BY id", (file_id,)
    ).fetchall()


def _vectors(store: Store, file_id: int) -> list[bytes | None]:
    rows = store.db.execute(
        "SELECT v.vector FROM segments s LEFT JOIN vectors v ON v.segment_id = s.id WHERE s.file_id = ? ORDER BY s.id",
        (file_id,),
    ).fetchall()
    return [r[0] for r in rows]


def store_differences(a: Store, b: Store, atol: float = 1e-4, limit: int = 50) -> list[str]:
    """What differs between stores ``a`` and ``b`` (at most ``limit`` lines): meta, files, each file's
    fields and segments, and vectors beyond ``atol`` (an embedder's float results may differ in their
    last bits with the batch a text was embedded in)."""
    out: list[str] = []
    for key in META_KEYS:
        if a.get_meta(key) != b.get_meta(key):
            out.append(f"meta {key}: {a.get_meta(key)!r} != {b.get_meta(key)!r}")
    fa, fb = _files(a), _files(b)
    for path in sorted(set(fa) ^ set(fb)):
        out.append(f"{path}: only in {'the first' if path in fa else 'the second'} store")
    for path in sorted(set(fa) & set(fb)):
        ra, rb = fa[path], fb[path]
        for name, va, vb in zip(FILE_FIELDS, ra, rb, strict=False):
            if va != vb:
                out.append(f"{path}: {name}: {va!r} != {vb!r}")
        sa, sb = _segments(a, ra[-1]), _segments(b, rb[-1])
        if sa != sb:
            first = next((i for i, (x, y) in enumerate(zip(sa, sb, strict=False)) if x != y), min(len(sa), len(sb)))
            out.append(f"{path}: segments differ (counts {len(sa)} and {len(sb)}; first at {first})")
            continue
        for i, (va, vb) in enumerate(zip(_vectors(a, ra[-1]), _vectors(b, rb[-1]), strict=True)):
            if (va is None) != (vb is None):
                out.append(f"{path}: segment {i}: a vector in one store only")
            elif va is not None and vb is not None:
                xa, xb = np.frombuffer(va, dtype=np.float32), np.frombuffer(vb, dtype=np.float32)
                if xa.shape != xb.shape or not np.allclose(xa, xb, atol=atol):
                    out.append(f"{path}: segment {i}: vectors differ")
        if len(out) >= limit:
            break
    return out[:limit]
