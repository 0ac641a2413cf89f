"""The studio's annotation workspace: one SQLite file where HippoCamp records are authored over a
profile, two annotators drafting each record independently and a third adjudicating.

**The file.** The user names it; it is never inside the profile's folder (the folder given, or the
one holding the records file given, and the profile's file tree), so agents listing the profile
never see it and exporting never overwrites the profile's own annotations. SQLite in WAL mode with
``synchronous=FULL``; every write is one ``BEGIN IMMEDIATE`` transaction that reads the current
version and writes in the same lock, so two processes (two browser tabs behind two servers, a
script beside the app) can write at once without losing an update. Tables:

================  ===================================================================================
table             holds
================  ===================================================================================
schema_version    one row per migration applied (version, when)
meta              key/value: the profile's name and the path it was opened with
annotators        everyone who saved a draft or an adjudication
items             record slots: the record id, when it was added
drafts            (item, annotator) -> the record JSON, its version (1, 2, ...) and when it was saved
adjudications     item -> the adjudicator, the chosen or merged record, its version, and ``basis``:
                  the draft versions it settled (a draft saved later puts the item back in the queue)
audit             who did what when: items added, saves, refused saves, exports, migrations
revisions         (v2) every save ever offered, refused ones included: no edit is ever lost
================  ===================================================================================

**Migrations** (`MIGRATIONS`) are forward-only: a tuple of SQL statements per version, applied in
order in one transaction when a workspace is opened; a workspace written by a newer hippocamp is
refused with an error saying so. `WORKSPACE_VERSION` is the number of migrations.

**Versions.** Each draft and adjudication carries a version: the first save makes version 1, each
later one adds 1. A save names the version it was based on (``expected_version``; None: "I saw
none"); when that is no longer the current version someone else saved in between, and the save is
refused with `StaleEdit`, which carries the record saved since and its version so the page can show
both. The refused record is kept in ``revisions`` all the same (`Workspace.history`).

**Protocol.** At most two annotators draft an item (`MAX_DRAFTS`); the adjudicator is someone who
drafted no version of it, and annotators cannot draft an item they adjudicated. A record's ``id`` is
its item's id (filled in when missing, refused when it differs). Drafts may be incomplete or invalid
while they are worked on: `Workspace.check` runs hippocamp's validation rules on one record against
the profile's real files (pages, durations, sheets) to show problems inline.

**Export** (`Workspace.export`) writes ``OUT/<Name>.json``, a release-layout records file (a JSON
array) of, per item: the adjudicated record when the adjudication is current; else, when its two
drafts agree (no disagreement under the thresholds), the draft of the annotator whose name sorts
first; with ``include_single`` also an item's only draft. Other items are skipped with the reason.
The records are checked first with every rule, as ``hippocamp validate`` would check the file, and
nothing is written when any has an error (`ExportError` lists them). The profile stays where it is;
check the exported file against it with::

    hippocamp validate OUT/<Name>.json --root PROFILE/<Name>      # the profile's file tree
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from hippocamp import registry
from hippocamp.dataset.profile import Profile, ProfileError, load_profile
from hippocamp.schema.io import JsonInputError, RecordsFile, RecordsFileError, check_json, write_records
from hippocamp.schema.problems import Problem, short_repr
from hippocamp.schema.record import HippoCampRecord
from hippocamp.studio.agreement import Thresholds, compare
from hippocamp.validate import CheckContext, ValidateOptions, rule_names, validate_profile

__all__ = [
    "MAX_DRAFTS",
    "MIGRATIONS",
    "WORKSPACE_VERSION",
    "AuditEntry",
    "ExportError",
    "ExportResult",
    "ItemStatus",
    "ItemSummary",
    "Revision",
    "SaveResult",
    "Saved",
    "StaleEdit",
    "Workspace",
    "WorkspaceError",
]

#: the SQL of each workspace version, in order; never edit a step that shipped, add one
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: annotators, items, drafts, adjudications, the audit log
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE annotators (name TEXT PRIMARY KEY, created TEXT NOT NULL)",
        "CREATE TABLE items (id TEXT PRIMARY KEY, created TEXT NOT NULL)",
        """CREATE TABLE drafts (
            item_id TEXT NOT NULL REFERENCES items(id),
            annotator TEXT NOT NULL REFERENCES annotators(name),
            record TEXT NOT NULL,
            version INTEGER NOT NULL CHECK (version >= 1),
            updated_at TEXT NOT NULL,
            PRIMARY KEY (item_id, annotator))""",
        """CREATE TABLE adjudications (
            item_id TEXT PRIMARY KEY REFERENCES items(id),
            adjudicator TEXT NOT NULL REFERENCES annotators(name),
            record TEXT NOT NULL,
            version INTEGER NOT NULL CHECK (version >= 1),
            basis TEXT NOT NULL DEFAULT '{}',
            updated_at TEXT NOT NULL)""",
        """CREATE TABLE audit (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            actor TEXT,
            action TEXT NOT NULL,
            item_id TEXT,
            detail TEXT NOT NULL DEFAULT '{}')""",
    ),
    (  # 2: every save offered is kept, refused ones too; the saves made before are its first rows
        """CREATE TABLE revisions (
            id INTEGER PRIMARY KEY,
            item_id TEXT NOT NULL REFERENCES items(id),
            role TEXT NOT NULL CHECK (role IN ('draft', 'adjudication')),
            author TEXT NOT NULL,
            version INTEGER,
            based_on INTEGER NOT NULL,
            accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
            record TEXT NOT NULL,
            at TEXT NOT NULL)""",
        "CREATE INDEX revisions_item ON revisions(item_id, role, author)",
        "CREATE INDEX audit_item ON audit(item_id)",
        """INSERT INTO revisions (item_id, role, author, version, based_on, accepted, record, at)
            SELECT item_id, 'draft', annotator, version, version - 1, 1, record, updated_at FROM drafts""",
        """INSERT INTO revisions (item_id, role, author, version, based_on, accepted, record, at)
            SELECT item_id, 'adjudication', adjudicator, version, version - 1, 1, record, updated_at
            FROM adjudications""",
    ),
)
WORKSPACE_VERSION = len(MIGRATIONS)
#: annotators who draft one item independently
MAX_DRAFTS = 2
_MAX_NAME = 100
_MAX_ID = 200

Role = Literal["draft", "adjudication"]
ItemStatus = Literal["empty", "single", "agree", "disagree"]


class WorkspaceError(Exception):
    """A workspace that cannot be opened or an operation refused; the message says why."""


class StaleEdit(WorkspaceError):
    """A save based on a version that is no longer current: someone saved in between. Carries what
    they saved (``record``, ``version``, ``author``, ``updated_at``; ``record`` None and version 0
    when nothing is saved) and the refused record (``yours``, also kept in the revisions)."""

    def __init__(self, item: str, role: Role, expected: int, current: Saved | None, yours: dict[str, Any]):
        self.item, self.role, self.expected, self.current, self.yours = item, role, expected, current, yours
        self.record = None if current is None else current.record
        self.version = 0 if current is None else current.version
        self.author = None if current is None else current.author
        self.updated_at = None if current is None else current.updated_at
        by = f" by {current.author} at {current.updated_at}" if current else ""
        super().__init__(
            f"item {item!r}: this {role} was based on version {expected}, but version {self.version} was saved{by}; "
            "reload it, merge and save again"
        )


class ExportError(WorkspaceError):
    """Records that may not be exported: the errors ``hippocamp validate`` would report."""

    def __init__(self, message: str, problems: list[Problem]):
        self.problems = problems
        listed = "\n".join(f"  {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{message}:\n{listed}{more}" if problems else message)


@dataclass(frozen=True)
class Saved:
    """A saved draft or adjudication: the record (a fresh copy), its version, who saved it, when."""

    record: dict[str, Any]
    version: int
    author: str
    updated_at: str


@dataclass(frozen=True)
class SaveResult:
    item: str
    role: Role
    author: str
    version: int
    updated_at: str


@dataclass(frozen=True)
class ItemSummary:
    """One item as a list shows it."""

    id: str
    created: str
    #: who drafted it, sorted by name
    annotators: tuple[str, ...]
    #: ``empty`` (no draft), ``single`` (one), ``agree`` / ``disagree`` (two drafts, under the thresholds)
    status: ItemStatus
    #: disagreeing fields of the two drafts
    disagreements: int
    adjudicated: bool
    adjudicator: str | None
    #: a draft was saved after the adjudication was (the item is back in the queue)
    outdated: bool


@dataclass(frozen=True)
class Revision:
    """One save offered: ``version`` is what it became (None when refused), ``based_on`` what it named."""

    id: int
    item: str
    role: Role
    author: str
    version: int | None
    based_on: int
    accepted: bool
    record: dict[str, Any]
    at: str


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: str
    actor: str | None
    action: str
    item: str | None
    detail: dict[str, Any]


@dataclass(frozen=True)
class ExportResult:
    """What `Workspace.export` wrote: the file, the ids in it, the items left out (id -> why) and the
    warnings and notes the exported file has."""

    path: Path
    records: tuple[str, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(value: Any, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise WorkspaceError(f"{what} must be text, got {type(value).__name__}")
    text = value.strip()
    if not text or len(text) > limit or re.search(r"[\x00-\x1f\x7f]", text):
        raise WorkspaceError(f"{what} must be 1 to {limit} characters without control characters, got {value!r}")
    return text


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _profile_folders(given: Path, profile: Profile) -> list[Path]:
    folders = [_real(given if given.is_dir() else given.parent)]
    if profile.root is not None:
        folders.append(_real(profile.root))
    return folders


def _refuse_inside(path: Path, folders: list[Path], what: str) -> None:
    real = _real(path)
    for folder in folders:
        if real == folder or real.is_relative_to(folder):
            raise WorkspaceError(f"{path}: {what} may not be inside the profile's folder {folder}; put it elsewhere")


class Workspace:
    """An open workspace. One SQLite connection, shared by the threads of one process under a lock;
    other processes open their own. Use `open`, and `close` (or ``with``) when done."""

    def __init__(
        self, path: Path, profile: Profile, db: sqlite3.Connection, options: ValidateOptions, folders: list[Path]
    ):
        self.path, self.profile, self.options = path, profile, options
        #: the profile's folders: neither the workspace nor an export may be inside them
        self._folders = folders
        self._db = db
        self._lock = threading.RLock()
        self._ctx = CheckContext(records_file=f"{profile.name}.json", profile=profile, options=options)

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, profile: Path, options: ValidateOptions | None = None) -> Workspace:
        """Open (or create) the workspace file ``path`` for the profile at ``profile`` (a release
        folder, a variant folder or a records file: `load_profile`), migrating an older workspace."""
        path, profile = Path(path), Path(profile)
        try:
            loaded = load_profile(profile)
        except (ProfileError, RecordsFileError) as exc:
            raise WorkspaceError(f"{profile}: cannot load the profile: {exc}") from None
        folders = _profile_folders(profile, loaded)
        _refuse_inside(path, folders, "a workspace")
        if path.is_dir():
            raise WorkspaceError(f"{path}: is a folder; name the workspace file")
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise WorkspaceError(f"{path}: cannot open: {exc}") from None
        try:
            mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise WorkspaceError(f"{path}: cannot use WAL mode here (got {mode!r}); use a local disk")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            _migrate(db, path)
            _bind(db, path, loaded, profile)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise WorkspaceError(f"{path}: not a studio workspace ({exc})") from None
        except BaseException:
            db.close()
            raise
        return cls(path, loaded, db, options or ValidateOptions(), folders)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        """The workspace's schema version."""
        with self._lock:
            return int(self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0])

    # -- transactions ----------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One snapshot for several SELECTs."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            finally:
                self._db.execute("COMMIT")

    @staticmethod
    def _audit(db: sqlite3.Connection, actor: str | None, action: str, item: str | None, **detail: Any) -> None:
        db.execute(
            "INSERT INTO audit (at, actor, action, item_id, detail) VALUES (?, ?, ?, ?, ?)",
            (_now(), actor, action, item, json.dumps(detail, ensure_ascii=False, default=str)),
        )

    @staticmethod
    def _require_item(db: sqlite3.Connection, item: str) -> None:
        if db.execute("SELECT 1 FROM items WHERE id = ?", (item,)).fetchone() is None:
            raise WorkspaceError(f"no item {item!r} in this workspace")

    # -- items -----------------------------------------------------------------------------------
    def add_item(self, record_id: str | None = None) -> str:
        """Add a record slot and return its id: ``record_id``, or the next free ``<name>_NNN`` (free in
        the workspace and in the profile's own records)."""
        with self._write() as db:
            if record_id is None:
                taken = {row[0] for row in db.execute("SELECT id FROM items")}
                taken |= {str(r.id) for r in self.profile.records}
                prefix = re.sub(r"[^0-9a-z]+", "_", self.profile.name.lower()).strip("_") or "item"
                n = len(taken) + 1
                while f"{prefix}_{n:03d}" in taken:
                    n += 1
                item = f"{prefix}_{n:03d}"
            else:
                item = _text(record_id, "a record id", _MAX_ID)
                if db.execute("SELECT 1 FROM items WHERE id = ?", (item,)).fetchone() is not None:
                    raise WorkspaceError(f"item {item!r} already exists")
            db.execute("INSERT INTO items (id, created) VALUES (?, ?)", (item, _now()))
            self._audit(db, None, "add-item", item)
        return item

    def items(self, thresholds: Thresholds | None = None) -> list[ItemSummary]:
        """Every item in the order added, with its drafts' agreement and adjudication."""
        with self._read() as db:
            items = db.execute("SELECT id, created FROM items ORDER BY rowid").fetchall()
            drafts: dict[str, list[tuple[str, str, str]]] = {}
            for item, name, record, updated in db.execute(
                "SELECT item_id, annotator, record, updated_at FROM drafts ORDER BY item_id, annotator"
            ):
                drafts.setdefault(item, []).append((name, record, updated))
            adjudications = {
                row[0]: (row[1], json.loads(row[2]))
                for row in db.execute("SELECT item_id, adjudicator, basis FROM adjudications")
            }
            versions = {
                (row[0], row[1]): row[2] for row in db.execute("SELECT item_id, annotator, version FROM drafts")
            }
        out = []
        for item, created in items:
            mine = drafts.get(item, [])
            status: ItemStatus = "empty" if not mine else "single"
            count = 0
            if len(mine) >= 2:
                count = sum(not f.agree for f in compare(json.loads(mine[0][1]), json.loads(mine[1][1]), thresholds))
                status = "disagree" if count else "agree"
            adjudicator, basis = adjudications.get(item, (None, {}))
            outdated = adjudicator is not None and any(versions[(item, name)] != basis.get(name) for name, _, _ in mine)
            out.append(
                ItemSummary(
                    id=item,
                    created=created,
                    annotators=tuple(name for name, _, _ in mine),
                    status=status,
                    disagreements=count,
                    adjudicated=adjudicator is not None,
                    adjudicator=adjudicator,
                    outdated=outdated,
                )
            )
        return out

    def annotators(self) -> list[str]:
        with self._lock:
            return [row[0] for row in self._db.execute("SELECT name FROM annotators ORDER BY name")]

    # -- drafts and adjudications ----------------------------------------------------------------
    def _encode(self, item: str, record: Mapping[str, Any], what: str) -> tuple[dict[str, Any], str]:
        if not isinstance(record, Mapping):
            raise WorkspaceError(f"item {item!r}: {what} must be a JSON object, got {type(record).__name__}")
        rid = record.get("id")
        if rid is not None and rid != "" and str(rid).strip() != item:
            raise WorkspaceError(
                f"item {item!r}: {what} has id {short_repr(repr(rid))}; a record's id is its item's id"
            )
        data = {"id": item, **{k: v for k, v in record.items() if k != "id"}}
        try:
            text = json.dumps(data, ensure_ascii=False, allow_nan=False)
            check_json(text, f"item {item!r}")
        except JsonInputError as exc:
            raise WorkspaceError(f"item {item!r}: {what} cannot be stored: {exc.message}") from None
        except (TypeError, ValueError, RecursionError) as exc:
            raise WorkspaceError(f"item {item!r}: {what} is not plain JSON: {exc}") from None
        return json.loads(text), text

    @staticmethod
    def _expected(value: int | None) -> int:
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise WorkspaceError(f"expected_version must be a version number (0 or more) or None, got {value!r}")
        return value

    def _save(
        self, role: Role, item: str, author: str, record: Mapping[str, Any], expected_version: int | None
    ) -> SaveResult:
        author = _text(author, "an annotator's name" if role == "draft" else "an adjudicator's name", _MAX_NAME)
        expected = self._expected(expected_version)
        data, text = self._encode(item, record, f"the {role} of {author}")
        stale: StaleEdit | None = None
        now = _now()
        with self._write() as db:
            self._require_item(db, item)
            current = self._current(db, role, item, author)
            version = 0 if current is None else current.version
            if expected != version:
                stale = StaleEdit(item, role, expected, current, data)
                self._revision(db, item, role, author, None, expected, text, now)
                self._audit(db, author, f"{role}-refused", item, expected=expected, current=version)
            else:
                basis = self._check_protocol(db, role, item, author, first=current is None)
                db.execute("INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)", (author, now))
                if role == "draft":
                    db.execute(
                        "INSERT INTO drafts (item_id, annotator, record, version, updated_at) VALUES (?, ?, ?, ?, ?)"
                        " ON CONFLICT (item_id, annotator) DO UPDATE SET"
                        " record = excluded.record, version = excluded.version, updated_at = excluded.updated_at",
                        (item, author, text, version + 1, now),
                    )
                else:
                    db.execute(
                        "INSERT INTO adjudications (item_id, adjudicator, record, version, basis, updated_at)"
                        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (item_id) DO UPDATE SET"
                        " adjudicator = excluded.adjudicator, record = excluded.record, version = excluded.version,"
                        " basis = excluded.basis, updated_at = excluded.updated_at",
                        (item, author, text, version + 1, json.dumps(basis), now),
                    )
                self._revision(db, item, role, author, version + 1, expected, text, now)
                self._audit(db, author, f"save-{role}", item, version=version + 1)
        if stale is not None:
            raise stale
        return SaveResult(item, role, author, version + 1, now)

    @staticmethod
    def _check_protocol(db: sqlite3.Connection, role: Role, item: str, author: str, first: bool) -> dict[str, int]:
        """Refuse what the protocol forbids; the draft versions an adjudication settles."""
        drafts = {
            row[0]: row[1] for row in db.execute("SELECT annotator, version FROM drafts WHERE item_id = ?", (item,))
        }
        if role == "draft":
            adjudicator = db.execute("SELECT adjudicator FROM adjudications WHERE item_id = ?", (item,)).fetchone()
            if adjudicator is not None and adjudicator[0] == author:
                raise WorkspaceError(f"item {item!r}: {author} adjudicated it and may not also draft it")
            if first and len(drafts) >= MAX_DRAFTS:
                raise WorkspaceError(
                    f"item {item!r} already has {len(drafts)} drafts ({', '.join(sorted(drafts))}); "
                    f"{MAX_DRAFTS} annotators draft an item"
                )
            return {}
        if not drafts:
            raise WorkspaceError(f"item {item!r} has no draft to adjudicate")
        if author in drafts:
            raise WorkspaceError(f"item {item!r}: {author} drafted it; a third person adjudicates")
        return drafts

    @staticmethod
    def _current(db: sqlite3.Connection, role: Role, item: str, author: str) -> Saved | None:
        if role == "draft":
            row = db.execute(
                "SELECT record, version, annotator, updated_at FROM drafts WHERE item_id = ? AND annotator = ?",
                (item, author),
            ).fetchone()
        else:
            row = db.execute(
                "SELECT record, version, adjudicator, updated_at FROM adjudications WHERE item_id = ?", (item,)
            ).fetchone()
        return None if row is None else Saved(json.loads(row[0]), row[1], row[2], row[3])

    @staticmethod
    def _revision(
        db: sqlite3.Connection,
        item: str,
        role: Role,
        author: str,
        version: int | None,
        based_on: int,
        text: str,
        at: str,
    ) -> None:
        db.execute(
            "INSERT INTO revisions (item_id, role, author, version, based_on, accepted, record, at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (item, role, author, version, based_on, int(version is not None), text, at),
        )

    def save_draft(
        self, item: str, annotator: str, record: Mapping[str, Any], expected_version: int | None
    ) -> SaveResult:
        """Save ``annotator``'s draft of ``item`` as the next version. ``expected_version`` is the
        version the edit started from (None: no draft yet); `StaleEdit` when another was saved since.
        The caller's record is not changed."""
        return self._save("draft", item, annotator, record, expected_version)

    def adjudicate(
        self, item: str, adjudicator: str, record: Mapping[str, Any], expected_version: int | None
    ) -> SaveResult:
        """Save the adjudicated record of ``item`` (chosen from the drafts or merged), with the same
        version rule as `save_draft`. It settles the drafts as they are now."""
        return self._save("adjudication", item, adjudicator, record, expected_version)

    def draft(self, item: str, annotator: str) -> Saved | None:
        """``annotator``'s current draft of ``item``, or None."""
        with self._lock:
            return self._current(self._db, "draft", item, annotator)

    def drafts(self, item: str) -> list[Saved]:
        """Every current draft of ``item``, by annotator name."""
        with self._lock:
            rows = self._db.execute(
                "SELECT record, version, annotator, updated_at FROM drafts WHERE item_id = ? ORDER BY annotator",
                (item,),
            ).fetchall()
        return [Saved(json.loads(r[0]), r[1], r[2], r[3]) for r in rows]

    def adjudication(self, item: str) -> Saved | None:
        """The current adjudicated record of ``item``, or None."""
        with self._lock:
            return self._current(self._db, "adjudication", item, "")

    def history(self, item: str, author: str | None = None) -> list[Revision]:
        """Every save offered on ``item`` (by ``author``), oldest first, refused ones included."""
        sql = (
            "SELECT id, item_id, role, author, version, based_on, accepted, record, at FROM revisions WHERE item_id = ?"
        )
        args: tuple[str, ...] = (item,)
        if author is not None:
            sql, args = sql + " AND author = ?", (item, author)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [Revision(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), json.loads(r[7]), r[8]) for r in rows]

    def audit(self, item: str | None = None) -> list[AuditEntry]:
        """The audit log (of one item), oldest first."""
        sql = "SELECT id, at, actor, action, item_id, detail FROM audit"
        args: tuple[str, ...] = ()
        if item is not None:
            sql, args = sql + " WHERE item_id = ?", (item,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [AuditEntry(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    # -- checking --------------------------------------------------------------------------------
    def check(self, record: Mapping[str, Any], item: str | None = None) -> list[Problem]:
        """hippocamp's validation rules run on one record against the profile's files: the problems
        to show beside the fields (a record that cannot be read gives its ``schema`` errors only).
        With ``item``, the record is checked as that item's (its id filled in). Measurements of the
        profile's files are kept while the workspace is open."""
        if not isinstance(record, Mapping):
            return [Problem(severity="error", rule="schema", message="a record is a JSON object")]
        data = dict(record)
        if item is not None and data.get("id") in (None, ""):
            data["id"] = item
        shown = None if data.get("id") is None else str(data["id"])
        try:
            rec = HippoCampRecord.model_validate(data)
        except ValidationError as exc:
            return [_schema_problem(self._ctx.records_file, shown, err) for err in exc.errors()]
        except (ValueError, TypeError, RecursionError) as exc:
            why = f"record cannot be read: {type(exc).__name__}: {str(exc)[:300]}"
            return [Problem(severity="error", rule="schema", file=self._ctx.records_file, record_id=shown, message=why)]
        problems: list[Problem] = []
        with self._lock:
            for name in rule_names():
                rule = registry.get("rule", name)
                try:
                    problems.extend(rule(self._ctx, rec, 0))
                except Exception as exc:  # a rule's bug must not hide the other findings
                    message = f"rule crashed: {type(exc).__name__}: {exc}"
                    problems.append(self._ctx.problem("error", name, rec, 0, "", message))
        return problems

    # -- export ----------------------------------------------------------------------------------
    def finished(
        self, thresholds: Thresholds | None = None, include_single: bool = False
    ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """The records an export would write now, and the items it would leave out (id -> why)."""
        return self._chosen(thresholds, include_single)

    def _chosen(
        self, thresholds: Thresholds | None, include_single: bool
    ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        chosen: list[dict[str, Any]] = []
        skipped: dict[str, str] = {}
        for summary in self.items(thresholds):
            adjudicated = self.adjudication(summary.id) if summary.adjudicated else None
            if adjudicated is not None and not summary.outdated:
                chosen.append(adjudicated.record)
            elif summary.outdated:
                skipped[summary.id] = "a draft was saved after the adjudication: adjudicate again"
            elif summary.status == "agree":
                chosen.append(self.drafts(summary.id)[0].record)
            elif summary.status == "disagree":
                skipped[summary.id] = f"awaiting adjudication ({summary.disagreements} disagreeing fields)"
            elif summary.status == "single" and include_single:
                chosen.append(self.drafts(summary.id)[0].record)
            elif summary.status == "single":
                skipped[summary.id] = "one draft only (a second annotator, or include_single)"
            else:
                skipped[summary.id] = "no draft"
        return chosen, skipped

    def export(self, out: Path, thresholds: Thresholds | None = None, include_single: bool = False) -> ExportResult:
        """Write the finished records to ``out/<Name>.json`` (rules in the module docstring) and
        return what was written. `ExportError` (nothing written) when a record has an error."""
        out = Path(out)
        _refuse_inside(out, self._folders, "an export")
        target = out / f"{self.profile.name}.json"
        chosen, skipped = self._chosen(thresholds, include_single)
        if not chosen:
            reasons = "; ".join(f"{k}: {v}" for k, v in skipped.items()) or "the workspace has no items"
            raise ExportError(f"nothing to export ({reasons})", [])
        records_file = RecordsFile(path=target, records=[], total=len(chosen))
        problems: list[Problem] = []
        for index, data in enumerate(chosen):
            try:
                records_file.records.append(HippoCampRecord.model_validate(data))
                records_file.indices.append(index)
            except ValidationError as exc:
                problems += [_schema_problem(str(target), str(data.get("id")), e, index) for e in exc.errors()]
            except (ValueError, TypeError, RecursionError) as exc:
                why = f"record cannot be read: {type(exc).__name__}: {str(exc)[:300]}"
                rid = str(data.get("id"))
                problems.append(Problem(severity="error", rule="schema", file=str(target), record_id=rid,
                                        record_index=index, message=why))  # fmt: skip
        profile = Profile(
            name=self.profile.name,
            root=self.profile.root,
            records_file=records_file,
            meta_path=self.profile.meta_path,
            file_meta=self.profile.file_meta,
            problems=problems,
        )
        report = validate_profile(profile, self.options)
        if report.errors:
            raise ExportError(f"{len(report.errors)} errors; nothing exported", report.errors)
        out.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        write_records(partial, chosen)
        os.replace(partial, target)
        ids = tuple(str(d["id"]) for d in chosen)
        with self._write() as db:
            self._audit(db, None, "export", None, path=str(target), records=list(ids), skipped=skipped)
        return ExportResult(target, ids, skipped, tuple(report.problems))


def _schema_problem(file: str, record_id: str | None, err: Any, index: int | None = None) -> Problem:
    where = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in err.get("loc", ())).replace(".[", "[")
    message = str(err.get("msg", "")).removeprefix("Value error, ")
    return Problem(severity="error", rule="schema", file=file, record_id=record_id, record_index=index, field=where,
                   message=f"record cannot be read: {message}", found=short_repr(err.get("input")))  # fmt: skip


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the workspace to `WORKSPACE_VERSION` in one transaction; refuse a newer or foreign database."""
    db.execute("BEGIN IMMEDIATE")
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_version" not in tables:
            if tables - {"sqlite_sequence"}:
                shown = ", ".join(sorted(tables)[:8])
                raise WorkspaceError(f"{path}: not a studio workspace (it holds other tables: {shown})")
            db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
        current = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]
        if current > WORKSPACE_VERSION:
            raise WorkspaceError(
                f"{path}: workspace version {current} was written by a newer hippocamp; this one reads up to "
                f"version {WORKSPACE_VERSION}. Upgrade hippocamp to open it"
            )
        for version in range(current + 1, WORKSPACE_VERSION + 1):
            for statement in MIGRATIONS[version - 1]:
                db.execute(statement)
            db.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, _now()))
        if 0 < current < WORKSPACE_VERSION:
            Workspace._audit(db, None, "migrate", None, **{"from": current, "to": WORKSPACE_VERSION})
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _bind(db: sqlite3.Connection, path: Path, profile: Profile, given: Path) -> None:
    """Record which profile the workspace is for; refuse another profile."""
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'profile_name'").fetchone()
        if row is None:
            db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("profile_name", profile.name), ("profile_path", str(_real(given)))],
            )
        elif row[0] != profile.name:
            raise WorkspaceError(f"{path}: this workspace is for profile {row[0]!r}, not {profile.name!r}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
