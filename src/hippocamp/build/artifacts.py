"""Which files of a source tree are system-generated artifacts, not the person's own files.

A versioned, ordered rule set (`RULES`, `RULESET_VERSION`). `classify` judges one path and returns the first
rule that matches, with the part of the path that matched; `filter_tree` judges a whole tree and works out
for itself the folder listings some rules look at. The rules only look at the path, the size and the first
bytes of a file, so the same tree always gives the same answer.

Rule groups, in the order they are tried (folder rules first, so an exclusion names the widest reason):

- **Version control and recycle bins**: ``.git`` (folder, or the file of a worktree), ``.svn``, ``.hg``,
  ``.bzr``, ``_darcs``, a ``CVS`` folder holding CVS's own ``Entries``/``Root``/``Repository``;
  ``$RECYCLE.BIN``, ``RECYCLER``/``RECYCLED`` (upper case, as Windows writes them), ``.Trash``,
  ``.Trashes``, ``.Trash-1000``, ``.local/share/Trash``, Synology's ``#recycle``.
- **Operating-system folders**: macOS volume data (``__MACOSX``, ``.Spotlight-V100``, ``.fseventsd``,
  ``.TemporaryItems``, ``.DocumentRevisions-V100``, ``.AppleDouble``, ``.VolumeIcon.icns``, ``.apdisk``...),
  Windows (``System Volume Information``, ``$WINDOWS.~BT``, ``Config.Msi``..., an ``AppData`` folder with
  its ``Local``/``LocalLow``/``Roaming``), file-system recovery (``lost+found``, ``FOUND.000``).
- **Caches and thumbnails**: ``.cache``, ``Library/Caches``, browser caches (``INetCache``, ``GPUCache``...),
  thumbnail folders (``.thumbnails``, Synology's ``@eaDir``), photo-library internals (a
  ``.photoslibrary``'s ``database``, ``private``, ``scopes``, ``resources/derivatives`` and
  ``resources/proxies``; Lightroom's ``*.lrdata`` previews), sync-service data (``.dropbox.cache``,
  ``.tmp.drivedownload``, Syncthing's ``.stfolder``/``.stversions``...).
- **Developer folders**: package folders (``node_modules``, ``bower_components``, ``.venv``,
  ``site-packages``, ``*.egg-info``...), Python caches (``__pycache__``, ``.pytest_cache``, ``*.pyc``...),
  editor metadata (``.idea``, ``.vscode``, ``.vs``), and build output (``build``, ``dist``, ``target``,
  ``venv``, ``_build``) *only* beside a file that makes its folder a code project (``setup.py``,
  ``pyproject.toml``, ``package.json``, ``Cargo.toml``, ``Makefile``... see `PROJECT_MARKERS`).
- **Partial downloads**: ``*.crdownload``, ``*.part``, ``*.partial``, ``*.opdownload``, Safari's
  ``*.download`` bundle.
- **Single files**: ``.DS_Store``, AppleDouble ``._name`` (checked by its magic number when the first bytes
  are known), ``.localized``, ``Icon\\r``, evicted-iCloud stubs (``.name.icloud``); ``Thumbs.db``,
  ``ehthumbs.db``, ``thumbcache_*.db``/``iconcache_*.db``, iPod/iPhoto ``*.ithmb``, Windows Media
  ``AlbumArt_{...}.jpg``; folder settings (``desktop.ini``, ``.directory``, ``.picasa.ini``, ``.nomedia``);
  Windows system files (``pagefile.sys``, ``NTUSER.DAT``...); ``*.lnk`` shortcuts; Office owner files
  (``~$name.docx``), LibreOffice locks (``.~lock.name.odt#``); ``*.tmp``/``*.temp``; editor swap and backup
  files (``*.swp``, ``*.swo``, ``*.swn``, ``name~``, ``#name#``, ``.#name``); empty lock files (``*.lock``,
  ``*.lck``, ``lock``); SQLite sidecars (``*-wal``, ``*-shm``, ``*-journal``) when their magic number, the
  database's extension or an empty file says so.

Being conservative with the person's files:

- Only the *last* suffix counts: ``notes.tmp.md`` and ``backup.swp.txt`` are kept.
- Names that tools write in one case are matched in that case: ``build``, ``dist``, ``node_modules``,
  ``RECYCLER``, ``CVS``. A ``Build/`` folder of photos is kept, and a lower-case ``build/`` is only output
  inside a code project. Names that macOS and Windows write on case-insensitive file systems
  (``THUMBS.DB``, ``.ds_store``, ``$Recycle.Bin``, ``*.TMP``) are matched in any case.
- A person's own database (``budget.sqlite``) is kept; only the sidecar files SQLite writes next to one are
  artifacts, and a plain file that merely ends in ``-journal`` (``travel-journal``) is kept.
- ``*.url`` and ``*.webloc`` Internet shortcuts are kept: a person makes them on purpose (a bookmark dragged
  to a folder) and their text, a web address, can answer a question. ``*.lnk`` is dropped: a binary
  pointer to another file on the same machine, mostly made by installers and the Recent Items list, and
  dangling once the tree is copied.
- Lock files are dropped only when empty (``package-lock.json`` and ``poetry.lock`` carry content).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "PROJECT_MARKERS",
    "RULES",
    "RULESET_VERSION",
    "Rule",
    "Verdict",
    "classify",
    "filter_tree",
]

#: bump whenever a rule is added, removed or changes what it matches
RULESET_VERSION = "1"

#: file names that make the folder holding them a code project (its build/dist/target/venv are output)
PROJECT_MARKERS = frozenset(
    "setup.py setup.cfg pyproject.toml Pipfile package.json Cargo.toml go.mod pom.xml build.gradle "
    "build.gradle.kts build.sbt CMakeLists.txt meson.build Makefile makefile GNUmakefile composer.json "
    "Gemfile mix.exs".split()
)
_OUTPUT_FOLDERS = frozenset({"build", "dist", "target", "venv", "_build"})

_APPLEDOUBLE_MAGIC = (b"\x00\x05\x16\x07", b"\x00\x05\x16\x00")  # AppleDouble, AppleSingle
_WAL_MAGIC = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
_JOURNAL_MAGIC = b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7"
_DATABASE_EXTENSIONS = frozenset({"db", "sqlite", "sqlite3", "db3", "sdb", "sqlitedb", "storedata", "realm"})


@dataclass(frozen=True)
class Rule:
    """One kind of system-generated artifact."""

    id: str
    description: str


class Verdict(NamedTuple):
    """Why a path is an artifact: the rule and what matched (a folder ends with ``/``, else the file name)."""

    rule: Rule
    matched: str


@dataclass(frozen=True)
class _Subject:
    parts: tuple[str, ...]
    folded: tuple[str, ...]
    size: int
    head: bytes
    listing: Callable[[str], frozenset[str]]  # names inside a folder, given as its relpath ("" is the root)

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def fname(self) -> str:
        return self.folded[-1]

    def folder(self, i: int) -> str:
        """The relpath of folder component ``i``, with a trailing slash."""
        return "/".join(self.parts[: i + 1]) + "/"


_Matcher = Callable[[_Subject], str | None]


def _fold(names: str) -> frozenset[str]:
    return frozenset(n.casefold() for n in names.split())


def _folders(names: Iterable[str], *, fold: bool) -> _Matcher:
    """A folder on the path has one of these names."""
    wanted = frozenset(n.casefold() for n in names) if fold else frozenset(names)

    def match(s: _Subject) -> str | None:
        parts = s.folded if fold else s.parts
        for i, part in enumerate(parts[:-1]):
            if part in wanted:
                return s.folder(i)
        return None

    return match


def _files(names: Iterable[str], *, fold: bool) -> _Matcher:
    """The file itself has one of these names."""
    wanted = frozenset(n.casefold() for n in names) if fold else frozenset(names)

    def match(s: _Subject) -> str | None:
        return s.name if (s.fname if fold else s.name) in wanted else None

    return match


def _folder_pattern(pattern: str) -> _Matcher:
    """A folder on the path matches a case-insensitive regular expression."""
    regex = re.compile(pattern, re.IGNORECASE)

    def match(s: _Subject) -> str | None:
        for i, part in enumerate(s.parts[:-1]):
            if regex.fullmatch(part):
                return s.folder(i)
        return None

    return match


def _file_pattern(pattern: str, *, fold: bool = True) -> _Matcher:
    """The file name matches a regular expression (case-insensitive unless ``fold`` is False)."""
    regex = re.compile(pattern, re.IGNORECASE if fold else 0)

    def match(s: _Subject) -> str | None:
        return s.name if regex.fullmatch(s.name) else None

    return match


def _any(*matchers: _Matcher) -> _Matcher:
    def match(s: _Subject) -> str | None:
        for m in matchers:
            found = m(s)
            if found is not None:
                return found
        return None

    return match


def _folder_then(first: str, nexts: str, *, fold: bool) -> _Matcher:
    """A folder named ``first`` whose next path component is one of ``nexts`` (both whitespace-separated)."""
    firsts = _fold(first) if fold else frozenset(first.split())
    wanted = _fold(nexts) if fold else frozenset(nexts.split())

    def match(s: _Subject) -> str | None:
        parts = s.folded if fold else s.parts
        for i in range(len(parts) - 1):
            if parts[i] in firsts and parts[i + 1] in wanted:
                return s.folder(i)
        return None

    return match


def _after(before: tuple[str, ...], name: str) -> _Matcher:
    """A folder named ``name`` right under the folders ``before`` (case-insensitive)."""
    before_f = tuple(b.casefold() for b in before)
    name_f = name.casefold()
    n = len(before_f)

    def match(s: _Subject) -> str | None:
        for i in range(n, len(s.folded) - 1):
            if s.folded[i] == name_f and s.folded[i - n : i] == before_f:
                return s.folder(i)
        return None

    return match


def _photos_library(s: _Subject) -> str | None:
    inside = {("database",), ("private",), ("scopes",), ("resources", "derivatives"), ("resources", "proxies")}
    for i, part in enumerate(s.folded[:-1]):
        if part.endswith(".photoslibrary"):
            for sub in inside:
                j = i + 1 + len(sub)
                if j < len(s.folded) and s.folded[i + 1 : j] == sub:
                    return s.folder(j - 1)
    return None


def _project_output(s: _Subject) -> str | None:
    for i, part in enumerate(s.parts[:-1]):
        if part in _OUTPUT_FOLDERS and s.listing("/".join(s.parts[:i])) & PROJECT_MARKERS:
            return s.folder(i)
    return None


def _appledouble(s: _Subject) -> str | None:
    if not s.name.startswith("._") or len(s.name) < 3:
        return None
    if s.head and not s.head.startswith(_APPLEDOUBLE_MAGIC):
        return None  # first bytes known and not AppleDouble: someone's own oddly named file
    return s.name


def _zero_byte_lock(s: _Subject) -> str | None:
    if s.size != 0:
        return None
    name = s.fname
    if name in {"lock", ".lock", "parent.lock", "singletonlock"} or name.rsplit(".", 1)[-1] in {"lock", "lck"}:
        return s.name
    return None


def _sqlite_sidecar(s: _Subject) -> str | None:
    base, sep, kind = s.fname.rpartition("-")
    if not sep or not base or kind not in {"wal", "shm", "journal"}:
        return None
    if s.size == 0 or s.head.startswith(_WAL_MAGIC) or s.head.startswith(_JOURNAL_MAGIC):
        return s.name
    if "." in base and base.rsplit(".", 1)[-1] in _DATABASE_EXTENSIONS:
        return s.name
    return None


def _suffix(*suffixes: str) -> _Matcher:
    """The file's last suffix is one of these (case-insensitive); the name must have a stem before it."""
    wanted = tuple(x.casefold() for x in suffixes)

    def match(s: _Subject) -> str | None:
        name = s.fname
        return s.name if any(name.endswith(x) and len(name) > len(x) for x in wanted) else None

    return match


def _folder_suffix(*suffixes: str) -> _Matcher:
    wanted = tuple(x.casefold() for x in suffixes)

    def match(s: _Subject) -> str | None:
        for i, part in enumerate(s.folded[:-1]):
            if any(part.endswith(x) and len(part) > len(x) for x in wanted):
                return s.folder(i)
        return None

    return match


_SPECS: tuple[tuple[Rule, _Matcher], ...] = (
    # --- folders ---------------------------------------------------------------------------------------
    (
        Rule("vcs-metadata", "Version-control metadata (.git, .svn, .hg, .bzr, CVS), written by the tool."),
        _any(
            _folders(".git .svn .hg .bzr _darcs".split(), fold=True),
            _files([".git"], fold=True),
            _folder_then("CVS", "Entries Entries.Log Root Repository Tag Template", fold=False),
        ),
    ),
    (
        Rule("recycle-bin", "Deleted files left in a recycle bin or trash folder."),
        _any(
            _folders(["$RECYCLE.BIN", ".Trash", ".Trashes", "#recycle"], fold=True),
            _folders(["RECYCLER", "RECYCLED"], fold=False),
            _folder_pattern(r"\.Trash-\d+"),
            _after((".local", "share"), "Trash"),
        ),
    ),
    (
        Rule("macos-system-data", "Data macOS keeps on a volume or in an archive (__MACOSX, Spotlight, FSEvents)."),
        _any(
            _folders(
                "__MACOSX .Spotlight-V100 .fseventsd .TemporaryItems .DocumentRevisions-V100 .AppleDouble "
                ".AppleDB .AppleDesktop .MobileBackups .PKInstallSandboxManager".split(),
                fold=True,
            ),
            _files(
                ".VolumeIcon.icns .apdisk .com.apple.timemachine.donotpresent .metadata_never_index".split(),
                fold=True,
            ),
        ),
    ),
    (
        Rule("windows-system-data", "Windows system folders and files (System Volume Information, pagefile.sys)."),
        _any(
            _folders(
                ["System Volume Information", "$WINDOWS.~BT", "$WINDOWS.~WS", "$WinREAgent", "$SysReset", "Config.Msi"],
                fold=True,
            ),
            _files("pagefile.sys hiberfil.sys swapfile.sys ntuser.ini Windows.edb".split(), fold=True),
            _file_pattern(r"(NTUSER|UsrClass)\.DAT.*"),
        ),
    ),
    (
        Rule("windows-appdata", "A Windows AppData folder: application settings and caches, not documents."),
        _folder_then("AppData", "Local LocalLow Roaming", fold=True),
    ),
    (
        Rule("fs-recovery", "Fragments recovered by a file-system check (lost+found, FOUND.000)."),
        _any(_folders(["lost+found"], fold=False), _folder_pattern(r"FOUND\.\d{3}")),
    ),
    (
        Rule("cache-folder", "An application or browser cache folder."),
        _any(
            _folders(
                [".cache", "INetCache", "Temporary Internet Files", "GPUCache", "Code Cache", "ShaderCache"],
                fold=True,
            ),
            _after(("Library",), "Caches"),
        ),
    ),
    (
        Rule("thumbnail-folder", "A folder of thumbnails an operating system or NAS made for its file browser."),
        _folders([".thumbnails", "@eaDir"], fold=True),
    ),
    (
        Rule("photo-library-cache", "Database, previews and caches inside a photo library (not its originals)."),
        _any(_photos_library, _folder_suffix(".lrdata")),
    ),
    (
        Rule("sync-metadata", "State and archived copies kept by a file-sync service (Dropbox, Drive, Syncthing)."),
        _any(
            _folders(
                (
                    ".dropbox.cache .tmp.drivedownload .tmp.driveupload .stfolder .stversions .SynologyWorkingDirectory"
                ).split(),
                fold=True,
            ),
            _files([".dropbox", ".dropbox.attr"], fold=True),
        ),
    ),
    (
        Rule("package-folder", "Installed third-party packages (node_modules, .venv, site-packages)."),
        _any(
            _folders(
                (
                    "node_modules bower_components jspm_packages .venv site-packages dist-packages __pypackages__ .eggs"
                ).split(),
                fold=False,
            ),
            _folder_suffix(".egg-info"),
        ),
    ),
    (
        Rule("python-cache", "Python bytecode and tool caches (__pycache__, *.pyc, .pytest_cache, .mypy_cache)."),
        _any(
            _folders(
                "__pycache__ .pytest_cache .mypy_cache .ruff_cache .ipynb_checkpoints .tox .nox".split(), fold=False
            ),
            _suffix(".pyc", ".pyo"),
        ),
    ),
    (
        Rule("editor-metadata", "Settings folders an IDE or editor writes into a project (.idea, .vscode, .vs)."),
        _folders([".idea", ".vscode", ".vs"], fold=False),
    ),
    (
        Rule("project-build-output", "Build output (build, dist, target, venv) beside a code project's own files."),
        _project_output,
    ),
    (
        Rule("partial-download", "An unfinished browser or torrent download (*.crdownload, *.part, *.download)."),
        _any(
            _suffix(".crdownload", ".part", ".partial", ".opdownload", ".download", ".!ut", ".!qb"),
            _folder_suffix(".download"),
        ),
    ),
    # --- single files ----------------------------------------------------------------------------------
    (
        Rule("macos-ds-store", "A .DS_Store file: Finder's view settings for a folder."),
        _files([".DS_Store"], fold=True),
    ),
    (
        Rule("macos-appledouble", "An AppleDouble ._ file: macOS metadata for a file copied to a foreign disk."),
        _appledouble,
    ),
    (
        Rule("macos-folder-marker", "A macOS folder marker (.localized, Icon\\r custom-icon file)."),
        _any(_files([".localized"], fold=True), _files(["Icon\r"], fold=False)),
    ),
    (
        Rule("icloud-placeholder", "A stub iCloud leaves for a file whose contents are not on this disk."),
        _file_pattern(r"\..+\.icloud"),
    ),
    (
        Rule("thumbnail-database", "A thumbnail cache file (Thumbs.db, thumbcache_*.db, *.ithmb, album-art copies)."),
        _any(
            _files(["Thumbs.db", "ehthumbs.db", "ehthumbs_vista.db", "AlbumArtSmall.jpg"], fold=True),
            _file_pattern(r"(thumbcache|iconcache)_\w+\.db"),
            _file_pattern(r"AlbumArt_\{[0-9a-f-]+\}_(Large|Small)\.jpg"),
            _suffix(".ithmb"),
        ),
    ),
    (
        Rule("folder-settings", "Per-folder settings a file browser writes (desktop.ini, .directory, .picasa.ini)."),
        _files(["desktop.ini", ".directory", ".picasa.ini", "Picasa.ini", ".nomedia"], fold=True),
    ),
    (
        Rule("windows-shortcut", "A Windows .lnk shortcut: a binary pointer to another file on that machine."),
        _suffix(".lnk"),
    ),
    (
        Rule("office-owner-file", "A ~$ owner file Microsoft Office writes while a document is open."),
        _file_pattern(r"~\$.+"),
    ),
    (
        Rule("libreoffice-lock", "A .~lock.*# file LibreOffice writes while a document is open."),
        _file_pattern(r"\.~lock\..+#"),
    ),
    (Rule("temp-file", "A temporary file (*.tmp, *.temp)."), _suffix(".tmp", ".temp")),
    (
        Rule("editor-swap", "An editor's swap, autosave or backup file (*.swp, *.swo, name~, #name#, .#name)."),
        _any(_suffix(".swp", ".swo", ".swn"), _file_pattern(r".+~"), _file_pattern(r"#.+#"), _file_pattern(r"\.#.+")),
    ),
    (Rule("empty-lock-file", "An empty lock file (*.lock, *.lck, lock) a program leaves behind."), _zero_byte_lock),
    (
        Rule("sqlite-sidecar", "A SQLite write-ahead log, shared-memory or rollback-journal file beside a database."),
        _sqlite_sidecar,
    ),
)

RULES: tuple[Rule, ...] = tuple(rule for rule, _ in _SPECS)


def _parts(relpath: str) -> tuple[str, ...]:
    parts = tuple(relpath.split("/"))
    if not relpath or relpath.startswith("/") or any(p in {"", ".", ".."} for p in parts):
        raise ValueError(f"not a relative POSIX path inside the source tree: {relpath!r}")
    return parts


def _classify(
    parts: tuple[str, ...], size: int, head: bytes, listing: Callable[[str], frozenset[str]]
) -> Verdict | None:
    subject = _Subject(parts, tuple(p.casefold() for p in parts), size, head, listing)
    for rule, match in _SPECS:
        found = match(subject)
        if found is not None:
            return Verdict(rule, found)
    return None


def classify(relpath: str, *, size: int, head: bytes = b"", siblings: frozenset[str] = frozenset()) -> Verdict | None:
    """The first rule that makes ``relpath`` a system-generated artifact, or None for a person's file.

    ``relpath`` is POSIX and relative to the source root; ``size`` is in bytes; ``head`` is the file's first
    bytes (a few dozen are enough; empty when unknown). ``siblings`` are the names of the entries in the
    folder that holds the path's ``build``/``dist``/``target``/``venv``/``_build`` folder, which is build
    output only when one of them is a `PROJECT_MARKERS` file (`filter_tree` works these out per folder).
    Raises ValueError for an absolute path or one with empty, ``.`` or ``..`` components.
    """
    return _classify(_parts(relpath), size, head, lambda _folder: siblings)


def filter_tree(entries: Iterable[tuple[str, int, bytes]]) -> tuple[list[str], list[tuple[str, Verdict]]]:
    """Split a tree's files into the person's files and artifacts.

    ``entries`` are (POSIX relpath, size, first bytes) for every file of the tree. Returns the kept relpaths
    and the excluded ones with their verdicts, both sorted by relpath. Raises ValueError for a bad or
    repeated relpath.
    """
    files: dict[str, tuple[tuple[str, ...], int, bytes]] = {}
    children: dict[str, set[str]] = {}
    for relpath, size, head in entries:
        parts = _parts(relpath)
        if relpath in files:
            raise ValueError(f"path listed twice: {relpath!r}")
        files[relpath] = (parts, size, head)
        for i, part in enumerate(parts):
            children.setdefault("/".join(parts[:i]), set()).add(part)
    frozen: dict[str, frozenset[str]] = {}

    def listing(folder: str) -> frozenset[str]:
        if folder not in frozen:
            frozen[folder] = frozenset(children.get(folder, ()))
        return frozen[folder]

    kept: list[str] = []
    excluded: list[tuple[str, Verdict]] = []
    for relpath in sorted(files):
        parts, size, head = files[relpath]
        verdict = _classify(parts, size, head, listing)
        if verdict is None:
            kept.append(relpath)
        else:
            excluded.append((relpath, verdict))
    return kept, excluded
