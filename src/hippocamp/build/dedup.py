"""Exact and near duplicates among a profile's files, with the versions of one document kept apart.

`find_duplicates` works in three passes over `Candidate`s sorted by path (so the input order never matters):

1. **Exact**: files with the same sha256 and size are one file; one is kept by the keep policy and the rest are
   dropped, whatever their names say (same bytes = same file).
2. **Near text**: the extracted text of the files still kept is normalised (Unicode NFKC, case-folded, split into
   ``\\w+`` words) and cut into word 5-shingles; each shingle is a 64-bit hash. A MinHash signature of 128
   permutations (multiply-add bijections of the 64-bit hashes, with parameters drawn from BLAKE2b of a fixed
   seed, so every machine gets the same signatures) is banded for locality-sensitive hashing: only files
   sharing a band are compared, and the band width is chosen for the threshold so a pair at the threshold
   becomes a candidate with probability >= 0.999. A candidate whose estimated Jaccard is within three
   standard errors of the threshold is confirmed with the exact Jaccard of the two shingle sets, which must
   reach ``text_threshold``. Texts shorter than ``min_text_chars`` (after normalising) are not compared.
3. **Near image**: a DCT perceptual hash (pHash) of each image file still kept: the picture in grey, resized to
   32x32 (more for longer hashes), its 2-D DCT-II, and the ``image_bits`` lowest frequencies (an 8x8 block
   for 64 bits, as in the classic pHash, so the DC bit is always set), each bit set when its coefficient is
   above the block's median. pHash rather than a difference hash: the lowest frequencies are what survives
   scaling and JPEG re-encoding, and the median split puts two unrelated pictures about half the bits
   apart, where a difference hash's gradient signs flip on flat areas (sky, walls, scanned paper). Pairs at
   most ``image_max_distance`` bits apart match; candidates come from the pigeonhole principle (split the
   hash into ``image_max_distance + 1`` pieces; a match agrees on one piece exactly). A pHash ignores colour
   and fine detail, so two receipts of one shop share one: every pair is confirmed on colour thumbnails
   (128x128, blurred; the 99th percentile of the absolute pixel difference at most
   ``image_max_pixel_difference``, 0.045, where resized and re-encoded copies measured at most 0.039 and
   different receipts and screenshots at least 0.051). An unreadable image, or one too flat to hash (a
   single colour), is skipped and listed in `DedupResult.skipped`.

A near-duplicate group is a star: files are visited in keep-policy order, and each file not yet in a group keeps
every still-free file that matches it directly, so every dropped file is itself close to the file kept for it.

**Versions.** A file name (without its extension) is read as ``[copy prefix] stem (marker)* [copy suffix]``:

- *copy markers* (the file is a copy, not a version): a prefix ``Copy of `` or ``Copy (2) of ``; a suffix
  `` (1)``, ``(2)``..., `` copy``, `` copy 2``, ``_copy``, `` - Copy``, `` - Copy (2)``, ``(copy)``;
- *version markers*, at the end of the stem, after a separator (space, ``_``, ``-``, ``.``) or in ``( )`` or
  ``[ ]``, several allowed (``report_v3_final``): ``v2``, ``v2.1``, ``ver 2``, ``version 3``; ``rev B``,
  ``rev. 3``, ``revision 2``; ``final``, ``draft``, ``revised``, ``edited``, ``updated``, ``old``, ``new``,
  ``latest``, ``wip``, ``reviewed``, ``approved``, ``signed``, ``corrected``, ``amended``, ``clean`` (each
  optionally followed by a number: ``final 2``); and dates ``2024-03-01``, ``2024_03_01``, ``2024.03.01``,
  ``20240301``, ``01-03-2024``, ``2024-03``. A bare number (``IMG_0042``, ``report 2``) is not a marker.

The stem (case-folded, separators collapsed) names a *family*; the set of markers is the file's *label*. Files
of one family with different labels are versions of each other (``report.docx``, ``report_v2.docx``,
``report final.docx``). Where a family has two or more labels, its files are never dropped as near duplicates
(of each other or of anything else), except by a file of the same family and label: ``report_v2 copy.docx``
with nearly the same text as ``report_v2.docx`` is still a near duplicate. Such families are reported as
`Versions` with the members that are kept.

**Keep policies**: ``latest`` keeps the most recently modified file, ``largest`` the largest, ``shortest-path``
the shortest relpath (in characters). Ties go to a file without a copy marker, then to the smallest relpath.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

__all__ = [
    "KEEP_POLICIES",
    "Candidate",
    "DedupResult",
    "Group",
    "NameParts",
    "Versions",
    "find_duplicates",
    "image_hash",
    "parse_name",
]

KEEP_POLICIES = ("latest", "largest", "shortest-path")
_POLICY_PHRASE = {"latest": "the newest", "largest": "the largest", "shortest-path": "the shortest path"}

SHINGLE_WORDS = 5
PERMUTATIONS = 128
_SEED = b"hippocamp.build.dedup/minhash/1"
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class Candidate:
    """One file to deduplicate."""

    path: str  # posix relpath
    size: int
    mtime: float
    sha256: str
    text: str | None = None  # extracted text (for near-duplicate text), None if none
    image: Path | None = None  # absolute path of an image file to perceptually hash, None if not an image


@dataclass(frozen=True)
class Group:
    """Files that are one file: ``keep`` stays, ``drop`` goes."""

    kind: Literal["exact", "near-text", "near-image"]
    keep: str
    drop: tuple[str, ...]
    similarity: float  # 1.0 for exact; the lowest text Jaccard or 1 - hamming/bits between keep and a drop
    reason: str


@dataclass(frozen=True)
class Versions:
    """Files whose names mark them as versions of one document; all kept."""

    stem: str
    members: tuple[str, ...]


@dataclass(frozen=True)
class DedupResult:
    groups: tuple[Group, ...]
    versions: tuple[Versions, ...]
    skipped: tuple[tuple[str, str], ...] = ()  # (path, reason) of images that could not be hashed

    def dropped(self) -> set[str]:
        """Every dropped relpath."""
        return {path for group in self.groups for path in group.drop}


# --- names -------------------------------------------------------------------------------------------------

_SEP = r"[\s_\-.]"
_WORD_MARKERS = "final|draft|revised|edited|updated|old|new|latest|wip|reviewed|approved|signed|corrected|amended|clean"
_DATE = (
    r"(?:19|20)\d\d[-_.](?:0?[1-9]|1[0-2])[-_.](?:0?[1-9]|[12]\d|3[01])"
    r"|(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"
    r"|(?:0?[1-9]|[12]\d|3[01])[-_.](?:0?[1-9]|1[0-2])[-_.](?:19|20)\d\d"
    r"|(?:19|20)\d\d[-_.](?:0[1-9]|1[0-2])"
)
_MARKER = (
    r"(?:v|ver|version)\s*\.?\s*\d+(?:[._]\d+)*"
    r"|rev(?:ision)?\s*\.?\s*(?:\d+|[a-z])"
    rf"|(?:{_WORD_MARKERS})(?:\s*\d+)?"
    rf"|{_DATE}"
)
_VERSION_END = re.compile(rf"(?:{_SEP}*[(\[]\s*(?P<b>{_MARKER})\s*[)\]]|{_SEP}+(?P<p>{_MARKER}))$", re.IGNORECASE)
_COPY_END = re.compile(
    r"(?:\s*\(\d+\)|[\s_\-]+copy(?:[\s_]*\(?\d+\)?)?|\s*[(\[]copy(?:\s*\d+)?[)\]])$",
    re.IGNORECASE,
)
_COPY_START = re.compile(r"^copy(?:\s*\(\d+\))?\s+of\s+", re.IGNORECASE)
_EXTENSION = re.compile(r"\.(?=[^.]*[a-z])[a-z0-9]{1,10}$", re.IGNORECASE)


@dataclass(frozen=True)
class NameParts:
    """What a file name says about itself (see the module docstring for the grammar)."""

    stem: str  # as written, separators trimmed
    family: str  # case-folded stem, separators collapsed to one space
    label: tuple[str, ...]  # normalised version markers, sorted; () when none
    copy: bool  # carries a copy marker


def _norm_marker(marker: str) -> str:
    """One spelling per marker: ``V 2.01`` -> ``v2.1``, ``revision B`` -> ``revb``, ``01-03-2024`` -> ``2024-3-1``."""
    marker = re.sub(r"\s+", "", marker.casefold())
    numbers = [int(x) for x in re.findall(r"\d+", marker)]
    if re.fullmatch(_DATE, marker):
        if len(numbers) == 1:  # 20240301
            numbers = [numbers[0] // 10000, numbers[0] // 100 % 100, numbers[0] % 100]
        elif numbers[-1] > 31:  # 01-03-2024
            numbers.reverse()
        return "-".join(map(str, numbers))
    revision = re.fullmatch(r"rev(?:ision)?\.?([a-z])", marker)
    if revision:
        return "rev" + revision.group(1)
    word = re.sub(r"[^a-z]", "", marker)
    word = {"ver": "v", "version": "v", "revision": "rev"}.get(word, word)
    return word + ".".join(map(str, numbers))


def parse_name(path: str) -> NameParts:
    """Read the version and copy markers of a relpath's file name."""
    name = path.rsplit("/", 1)[-1]
    rest = _EXTENSION.sub("", name) or name
    copy = False
    labels: list[str] = []
    while True:
        m = _COPY_START.match(rest)
        if m and rest[m.end() :].strip():
            rest, copy = rest[m.end() :], True
            continue
        m = _COPY_END.search(rest)
        if m and rest[: m.start()].strip(" _-."):
            rest, copy = rest[: m.start()], True
            continue
        m = _VERSION_END.search(rest)
        if m and rest[: m.start()].strip(" _-."):
            labels.append(_norm_marker(m.group("b") or m.group("p")))
            rest = rest[: m.start()]
            continue
        break
    stem = rest.strip(" _-.")
    family = re.sub(rf"{_SEP}+", " ", stem.casefold()).strip()
    return NameParts(stem, family, tuple(sorted(labels)), copy)


# --- keep policy -------------------------------------------------------------------------------------------


def _policy_key(policy: str) -> Callable[[Candidate, NameParts], tuple[float | int | bool | str, ...]]:
    if policy == "latest":
        return lambda c, n: (-c.mtime, n.copy, c.path)
    if policy == "largest":
        return lambda c, n: (-c.size, n.copy, c.path)
    if policy == "shortest-path":
        return lambda c, n: (len(c.path), n.copy, c.path)
    raise ValueError(f"unknown keep policy {policy!r}; use one of: {', '.join(KEEP_POLICIES)}")


# --- text --------------------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _u64(label: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(label, digest_size=8, key=_SEED).digest(), "little")


@functools.cache
def _permutations() -> tuple[np.ndarray, np.ndarray]:
    a = np.array([_u64(b"a%d" % i) | 1 for i in range(PERMUTATIONS)], dtype=np.uint64)  # odd: a bijection
    b = np.array([_u64(b"b%d" % i) for i in range(PERMUTATIONS)], dtype=np.uint64)
    return a, b


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise (uint64 arithmetic wraps)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _shingles(words: list[str], cache: dict[str, int]) -> np.ndarray:
    """Sorted unique 64-bit hashes of the word 5-shingles (the whole text is one shingle when shorter)."""
    for w in set(words).difference(cache):
        cache[w] = _u64(w.encode("utf-8"))
    hashes = np.fromiter(map(cache.__getitem__, words), dtype=np.uint64, count=len(words))
    k = min(SHINGLE_WORDS, len(hashes))
    n = len(hashes) - k + 1
    acc = hashes[:n].copy()
    step = np.uint64(0x9E3779B97F4A7C15)
    for j in range(1, k):
        acc = acc * step + hashes[j : j + n]
    return np.unique(_mix(acc))


def _minhash(shingles: np.ndarray) -> np.ndarray:
    a, b = _permutations()
    signature = np.full(PERMUTATIONS, np.iinfo(np.uint64).max, dtype=np.uint64)
    for start in range(0, len(shingles), 2048):
        chunk = shingles[start : start + 2048]
        np.minimum(signature, (a[:, None] * chunk[None, :] + b[:, None]).min(axis=1), out=signature)
    return signature


def _band_rows(threshold: float) -> int:
    """The widest LSH band that still makes a pair at ``threshold`` a candidate with probability >= 0.999."""
    for rows in (16, 8, 4, 2):
        bands = PERMUTATIONS // rows
        if 1.0 - (1.0 - threshold**rows) ** bands >= 0.999:
            return rows
    return 1


def _jaccard(x: np.ndarray, y: np.ndarray) -> float:
    both = len(np.intersect1d(x, y, assume_unique=True))
    return both / (len(x) + len(y) - both)


class _TextIndex:
    """MinHash signatures of word-shingle sets, banded for locality-sensitive hashing."""

    def __init__(self, texts: dict[int, list[str]], threshold: float) -> None:
        cache: dict[str, int] = {}
        self.shingles = {i: _shingles(words, cache) for i, words in texts.items()}
        self.signatures = {i: _minhash(sh) for i, sh in self.shingles.items()}
        self.threshold = threshold
        # the estimate only screens candidates: three standard errors (and one permutation) below the threshold
        self.floor = threshold - 3.0 * math.sqrt(threshold * (1.0 - threshold) / PERMUTATIONS) - 1.0 / PERMUTATIONS
        rows = _band_rows(threshold)
        self.keys: dict[int, list[tuple[int, bytes]]] = {}
        self.buckets: dict[tuple[int, bytes], set[int]] = defaultdict(set)
        for i, sig in self.signatures.items():
            self.keys[i] = [
                (band, sig[band * rows : (band + 1) * rows].tobytes()) for band in range(PERMUTATIONS // rows)
            ]
            for key in self.keys[i]:
                self.buckets[key].add(i)

    def near(self, i: int) -> set[int]:
        return set().union(*(self.buckets[key] for key in self.keys[i])) - {i}

    def score(self, i: int, others: list[int]) -> list[tuple[int, float]]:
        """The others whose shingle sets have Jaccard >= threshold with file i's, with that Jaccard."""
        if not others:
            return []
        estimates = (np.stack([self.signatures[o] for o in others]) == self.signatures[i]).mean(axis=1)
        found = []
        for other, estimate in zip(others, estimates.tolist(), strict=True):
            if estimate >= self.floor:
                similarity = _jaccard(self.shingles[i], self.shingles[other])
                if similarity >= self.threshold:
                    found.append((other, similarity))
        return found


# --- images ------------------------------------------------------------------------------------------------


@functools.cache
def _dct_matrix(n: int) -> np.ndarray:
    k = np.arange(n)[:, None]
    x = np.arange(n)[None, :]
    matrix = np.cos(np.pi * (2 * x + 1) * k / (2 * n)) * math.sqrt(2.0 / n)
    matrix[0] /= math.sqrt(2.0)
    return matrix


def _side(bits: int) -> int:
    side = math.isqrt(bits)
    if side < 2 or side * side != bits:
        raise ValueError(f"image_bits must be a square of at least 4 (16, 64, 256...), got {bits}")
    return side


def image_hash(path: Path, bits: int = 64) -> int:
    """The DCT perceptual hash of an image file, ``bits`` bits as an int (bit i = coefficient i above median).

    Raises what Pillow raises for an unreadable file, and ValueError for a picture too flat to hash.
    """
    from PIL import Image, ImageOps

    side = _side(bits)
    n = max(32, 4 * side)
    with Image.open(path) as img:
        img.draft("L", (n, n))  # JPEG decodes straight at a reduced scale
        upright = ImageOps.exif_transpose(img)
        grey = upright.convert("L").resize((n, n), Image.Resampling.LANCZOS, reducing_gap=3.0)
    pixels = np.asarray(grey, dtype=np.float64)
    if float(pixels.std()) < 1.0:
        raise ValueError("too flat to hash (a single colour)")
    dct = _dct_matrix(n)
    block = (dct @ pixels @ dct.T)[:side, :side].ravel()
    above = block > np.median(block)
    return int(sum(1 << i for i, bit in enumerate(above) if bit))


THUMB = 128


def pixel_thumbnail(path: Path) -> np.ndarray:
    """The picture upright, in colour, at 128x128 and lightly blurred (JPEG noise and resampling gone),
    values in [0, 1]."""
    from PIL import Image, ImageFilter, ImageOps

    with Image.open(path) as img:
        img.draft("RGB", (THUMB * 2, THUMB * 2))
        upright = ImageOps.exif_transpose(img).convert("RGB")
        small = upright.resize((THUMB, THUMB), Image.Resampling.LANCZOS).filter(ImageFilter.GaussianBlur(1))
    return np.asarray(small, dtype=np.float32) / 255.0


def pixel_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The 99th percentile of the absolute difference of two thumbnails: near 0.02 for a resized, re-encoded
    copy; above 0.05 for two receipts of one shop or two screenshots of one app (measured on synthetic
    profiles, seed 12)."""
    return float(np.percentile(np.abs(a - b), 99))


class _ImageIndex:
    """Perceptual hashes bucketed by the pigeonhole principle: hashes at most d bits apart share one of d+1 pieces."""

    def __init__(self, hashes: dict[int, int], bits: int, max_distance: int,
                 paths: dict[int, Path] | None = None, max_pixel_difference: float = 1.0) -> None:  # fmt: skip
        self.hashes = hashes
        self.paths = paths or {}
        self.max_pixel_difference = max_pixel_difference
        self._thumbs: dict[int, np.ndarray | None] = {}
        self.bits = bits
        self.max_distance = max_distance
        pieces = max_distance + 1
        bounds = [round(bits * p / pieces) for p in range(pieces + 1)]
        self.keys: dict[int, list[tuple[int, int]]] = {}
        self.buckets: dict[tuple[int, int], set[int]] = defaultdict(set)
        for i, h in hashes.items():
            self.keys[i] = [
                (p, (h >> lo) & ((1 << (hi - lo)) - 1)) for p, (lo, hi) in enumerate(itertools.pairwise(bounds))
            ]
            for key in self.keys[i]:
                self.buckets[key].add(i)

    def near(self, i: int) -> set[int]:
        return set().union(*(self.buckets[key] for key in self.keys[i])) - {i}

    def score(self, i: int, others: list[int]) -> list[tuple[int, float]]:
        """The others at most max_distance bits from file i, with 1 - distance/bits."""
        found = []
        for other in others:
            distance = (self.hashes[i] ^ self.hashes[other]).bit_count()
            if distance <= self.max_distance and self._same_pixels(i, other):
                found.append((other, 1.0 - distance / self.bits))
        return found

    def _thumb(self, i: int) -> np.ndarray | None:
        if i not in self._thumbs:
            try:
                self._thumbs[i] = pixel_thumbnail(self.paths[i])
            except Exception:  # unreadable now: never matched
                self._thumbs[i] = None
        return self._thumbs[i]

    def _same_pixels(self, i: int, other: int) -> bool:
        """The confirmation: a pHash ignores colour and fine detail, so two receipts of one shop or two
        screenshots of one app share a hash; their colour thumbnails still differ where a copy's do not."""
        if self.max_pixel_difference >= 1.0 or i not in self.paths or other not in self.paths:
            return True
        a, b = self._thumb(i), self._thumb(other)
        return a is not None and b is not None and pixel_difference(a, b) <= self.max_pixel_difference


# --- grouping ----------------------------------------------------------------------------------------------


class _Index(Protocol):
    def near(self, i: int) -> set[int]: ...
    def score(self, i: int, others: list[int]) -> list[tuple[int, float]]: ...


def _stars(
    order: list[int], index: _Index, protected: set[int], peers: dict[int, set[int]]
) -> list[tuple[int, list[tuple[int, float]]]]:
    """Visit ``order``; each free file keeps every free file that matches it directly and that it may drop.

    ``protected`` files (members of a version family) may only be dropped by their ``peers`` (same family and
    label); other files by anyone.
    """
    taken: set[int] = set()
    stars: list[tuple[int, list[tuple[int, float]]]] = []
    for keep in order:
        if keep in taken:
            continue
        taken.add(keep)
        near = index.near(keep) - taken
        near = (near - protected) | (near & peers.get(keep, set()))
        drops = index.score(keep, sorted(near))
        if drops:
            taken.update(other for other, _ in drops)
            stars.append((keep, drops))
    return stars


def _check(files: Sequence[Candidate], text_threshold: float, image_max_distance: int, bits: int) -> None:
    seen: set[str] = set()
    for c in files:
        if c.path in seen:
            raise ValueError(f"candidate listed twice: {c.path!r}")
        seen.add(c.path)
    if not 0.0 < text_threshold <= 1.0:
        raise ValueError(f"text_threshold must be in (0, 1], got {text_threshold}")
    if not 0 <= image_max_distance < bits:
        raise ValueError(f"image_max_distance must be in [0, {bits}), got {image_max_distance}")


def _exact(cands: list[Candidate], rank: dict[int, int], kept_as: str) -> list[Group]:
    same: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, c in enumerate(cands):
        same[c.sha256.lower(), c.size].append(i)
    groups = []
    for members in same.values():
        if len(members) > 1:
            keep, *copies = sorted(members, key=rank.__getitem__)
            drop = tuple(sorted(cands[d].path for d in copies))
            groups.append(Group("exact", cands[keep].path, drop, 1.0, f"same bytes as {cands[keep].path} ({kept_as})"))
    return groups


def _hash_images(cands: list[Candidate], skip: set[int], bits: int) -> tuple[dict[int, int], list[tuple[str, str]]]:
    hashes: dict[int, int] = {}
    skipped: list[tuple[str, str]] = []
    for i, c in enumerate(cands):
        if i in skip or c.image is None:
            continue
        try:
            hashes[i] = image_hash(c.image, bits)
        except Exception as exc:  # Pillow's decoders raise many kinds of error on a bad file
            skipped.append((c.path, f"image not hashed: {type(exc).__name__}: {exc}"))
    return hashes, skipped


def find_duplicates(
    files: Sequence[Candidate],
    *,
    policy: str = "latest",
    text_threshold: float = 0.9,
    image_bits: int = 64,
    image_max_distance: int = 4,
    image_max_pixel_difference: float = 0.045,
    min_text_chars: int = 200,
) -> DedupResult:
    """Exact and near duplicates among ``files``, and the version families kept apart (see the module doc).

    Raises ValueError for an unknown policy, a repeated path or a parameter out of range; an image that
    cannot be read is skipped (listed in the result), never raised.
    """
    key = _policy_key(policy)
    _side(image_bits)
    _check(files, text_threshold, image_max_distance, image_bits)
    cands = sorted(files, key=lambda c: c.path)
    names = [parse_name(c.path) for c in cands]
    order = sorted(range(len(cands)), key=lambda i: key(cands[i], names[i]))
    rank = {i: r for r, i in enumerate(order)}
    kept_as = f"kept as {_POLICY_PHRASE[policy]}"

    groups = _exact(cands, rank, kept_as)
    dropped = {i for i, c in enumerate(cands) if c.path in {p for g in groups for p in g.drop}}

    # version families: two or more labels among the files left
    labels: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for i, n in enumerate(names):
        if i not in dropped:
            labels[n.family].add(n.label)
    versioned = {family for family, found in labels.items() if len(found) > 1}
    same_label: dict[tuple[str, tuple[str, ...]], set[int]] = defaultdict(set)
    for i, n in enumerate(names):
        if n.family in versioned and i not in dropped:
            same_label[n.family, n.label].add(i)
    peers = {i: members for members in same_label.values() for i in members}
    protected = set(peers)

    texts: dict[int, list[str]] = {}
    for i, c in enumerate(cands):
        if i not in dropped and c.text is not None:
            words = _words(c.text)
            if words and len(" ".join(words)) >= min_text_chars:
                texts[i] = words
    if texts:
        stars = _stars([i for i in order if i in texts], _TextIndex(texts, text_threshold), protected, peers)
        for keep, drops in stars:
            low = min(s for _, s in drops)
            dropped.update(d for d, _ in drops)
            reason = (
                f"text at least {math.floor(low * 100)}% the same as {cands[keep].path} "
                f"(Jaccard of word {SHINGLE_WORDS}-shingles; {kept_as})"
            )
            drop = tuple(sorted(cands[d].path for d, _ in drops))
            groups.append(Group("near-text", cands[keep].path, drop, low, reason))

    hashes, skipped = _hash_images(cands, dropped, image_bits)
    if hashes:
        paths = {i: cands[i].image for i in hashes if cands[i].image is not None}
        index = _ImageIndex(hashes, image_bits, image_max_distance, paths, image_max_pixel_difference)  # type: ignore[arg-type]
        for keep, drops in _stars([i for i in order if i in hashes], index, protected, peers):
            low = min(s for _, s in drops)
            dropped.update(d for d, _ in drops)
            apart = round((1.0 - low) * image_bits)
            reason = (
                f"looks like {cands[keep].path} (perceptual hashes at most {apart} of {image_bits} bits apart; "
                f"{kept_as})"
            )
            drop = tuple(sorted(cands[d].path for d, _ in drops))
            groups.append(Group("near-image", cands[keep].path, drop, low, reason))

    families: dict[str, list[int]] = defaultdict(list)
    for i in sorted(protected - dropped):
        families[names[i].family].append(i)
    versions = [
        Versions(names[members[0]].stem, tuple(cands[i].path for i in members))
        for _, members in sorted(families.items())
        if len({names[i].label for i in members}) > 1
    ]
    kinds = {"exact": 0, "near-text": 1, "near-image": 2}
    groups.sort(key=lambda g: (kinds[g.kind], g.keep))
    return DedupResult(tuple(groups), tuple(versions), tuple(sorted(skipped)))
