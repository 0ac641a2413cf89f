"""Stable, format-preserving pseudonyms for one profile.

`Pseudonyms` replaces an identifier by one of the same shape, chosen by a keyed hash (HMAC-SHA256 under the
profile's secret) and remembered in a table, so the same original gets the same pseudonym in a mail
header, a DOCX body and a file name, and re-running gives the same answer. The table is the private
mapping: `build` keeps it (and the secret) outside the released profile.

Shapes kept: a name token keeps its case (``PRIYA``/``priya``/``Priya``), role (given names from a given
name pool of the same gender where Faker's lists say, surnames from a surname pool) and never lands on a
name that occurs in the profile; an e-mail keeps its separators and its public provider (``gmail.com``);
a phone keeps its punctuation, country code, trunk prefix and length (a North American number stays
dialable in shape); an IBAN keeps its country and grouping and gets valid check digits; a card keeps its
length, grouping and first digit and passes Luhn; IDs keep letters-for-letters and digits-for-digits; an
address keeps its number of digits, street word, city and state (a post code gets new digits); coordinates
move by one profile-wide offset, so distances between places are kept. Word pseudonyms (names, organisation and street
words) are injective per kind: given names and surnames never share one, also after the table is loaded back.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import importlib
import itertools
import re
import string
from collections.abc import Iterable, Iterator

__all__ = ["PUBLIC_MAIL_DOMAINS", "Pseudonyms", "match_case"]

PUBLIC_MAIL_DOMAINS = frozenset(
    """gmail.com googlemail.com yahoo.com yahoo.co.uk ymail.com outlook.com hotmail.com hotmail.co.uk live.com
    msn.com icloud.com me.com mac.com aol.com proton.me protonmail.com gmx.com gmx.de gmx.net web.de mail.com
    fastmail.com zoho.com yandex.com qq.com 163.com example.com example.org example.net""".split()
)
_WORDS = (
    "Alder Birch Cedar Elm Hawthorn Juniper Linden Maple Oak Rowan Willow Aspen Poplar Sycamore Chestnut "
    "Magnolia Spruce Walnut Laurel Heron Kestrel Finch Wren Lark Plover Marten Otter Beacon Harbor Meadow "
    "Brook Summit Ridge Valley Northgate Bluefield Copper Silver Amber Granite Quarry Orchard Lantern Compass "
    "Anchor Falcon Osprey Tamarack Hollow Glen Fairview Kingsley Ashby Thornton Westbrook Easton Linwood"
).split()
_TITLES = {"mr", "mrs", "ms", "mx", "miss", "dr", "prof", "professor", "sir", "dame", "rev", "fr", "judge", "hon"}
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+|[^\w\s]|_|\s+")


def match_case(original: str, new: str) -> str:
    """``new`` spelled in the case of ``original`` (upper, lower or title)."""
    if original.isupper() and len(original) > 1:
        return new.upper()
    if original.islower():
        return new.lower()
    if original[:1].isupper():
        return new[:1].upper() + new[1:].lower()
    return new


@functools.cache
def _name_pools() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], frozenset[str], frozenset[str]]:
    female: set[str] = set()
    male: set[str] = set()
    last: set[str] = set()
    for loc in ("en_US", "en_GB", "en_IE", "en_NZ"):
        provider = importlib.import_module(f"faker.providers.person.{loc}").Provider
        for attr, into in (("first_names_female", female), ("first_names_male", male), ("last_names", last)):
            values = getattr(provider, attr, ())
            for v in values if isinstance(values, list | tuple | dict) else list(values):
                if isinstance(v, str) and v.isascii() and v.isalpha() and 3 <= len(v) <= 10:
                    into.add(v.capitalize())
    both = female & male
    f, m = sorted(female - both), sorted(male - both)
    return tuple(f), tuple(m), tuple(sorted(last)), frozenset(x.lower() for x in f), frozenset(x.lower() for x in m)


@functools.cache
def _country_codes() -> frozenset[str]:
    """The ITU country calling codes (``1``, ``44``, ``353``...), from ``phonenumbers``' metadata."""
    import phonenumbers

    return frozenset(str(code) for code in phonenumbers.COUNTRY_CODE_TO_REGION_CODE)


def _country_code_length(digits: str) -> int:
    """How many leading digits of an international number are its country code (codes are prefix-free)."""
    return next((n for n in (1, 2, 3) if digits[:n] in _country_codes()), 2)


def _candidates(pool: tuple[str, ...], start: int) -> Iterator[str]:
    """The pool from ``start`` on, then (the pool exhausted) pairs, triples... of its words, as one word."""
    n = len(pool)
    yield from (pool[(start + i) % n] for i in range(n))
    for size in itertools.count(2):
        for j in range(n**size):
            words = [pool[(start + j // n**k) % n] for k in range(size)]
            yield words[0] + "".join(w.lower() for w in words[1:])


class Pseudonyms:
    """The profile's replacement table; ``table[kind][original] = pseudonym``."""

    def __init__(self, secret: bytes, table: dict[str, dict[str, str]] | None = None,
                 avoid: Iterable[str] = ()) -> None:  # fmt: skip
        if len(secret) < 16:
            raise ValueError("the pseudonym secret must be at least 16 bytes")
        self.secret = secret
        self.table: dict[str, dict[str, str]] = {k: dict(v) for k, v in (table or {}).items()}
        self.avoid = {a.lower() for a in avoid}
        self._used: dict[str, set[str]] = {k: {v.lower() for v in vals.values()} for k, vals in self.table.items()}

    # --- the keyed choice ---------------------------------------------------------------------------

    def _hash(self, *parts: str) -> int:
        digest = hmac.new(self.secret, "\x1f".join(parts).encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big")

    def _stream(self, *parts: str) -> Iterable[int]:
        counter = 0
        while True:
            digest = hmac.new(self.secret, "\x1f".join((*parts, str(counter))).encode(), hashlib.sha256).digest()
            yield from digest
            counter += 1

    def _pick(self, kind: str, key: str, pool: tuple[str, ...]) -> str:
        """The keyed choice from ``pool``: never a pseudonym already given in ``kind`` (given names and surnames
        share the kind ``name``), a token to avoid or the original itself; pairs of words once it is used up."""
        table = self.table.setdefault(kind, {})
        if key in table:
            return table[key]
        used = self._used.setdefault(kind, set())
        for candidate in _candidates(pool, self._hash(kind, key)):
            low = candidate.lower()
            if low not in used and low not in self.avoid and low != key:
                break
        used.add(candidate.lower())
        table[key] = candidate
        return candidate

    # --- names -------------------------------------------------------------------------------------------

    def name_token(self, token: str, role: str = "given") -> str:
        """One name part (``Priya``, ``RAMAN``), replaced in its case; ``role`` is ``given`` or ``surname``."""
        key = token.lower()
        if key in self.table.get("name", {}):
            return match_case(token, self.table["name"][key])
        female, male, last, fset, mset = _name_pools()
        if role == "surname":
            new = self._pick("name", key, last)
        elif key in mset:
            new = self._pick("name", key, male)
        else:
            new = self._pick("name", key, female if key in fset or self._hash("g", key) % 2 else male)
        return match_case(token, new)

    def person(self, text: str, roles: dict[str, str] | None = None) -> str:
        """A whole name (``Dr. Mira J. Lindqvist``, ``Lindqvist, Mira``): titles kept, initials mapped."""
        roles = roles or {}
        words = [t for t in _TOKEN.findall(text)]
        alpha = [i for i, t in enumerate(words) if t[:1].isalpha() and t.lower() not in _TITLES]
        comma = "," in text
        out = []
        for i, tok in enumerate(words):
            if i not in alpha:
                out.append(tok)
                continue
            if len(tok) == 1:  # an initial
                out.append(self._initial(tok))
                continue
            role = roles.get(tok.lower())
            if role is None:
                last_word = alpha[0] if comma else alpha[-1]
                role = "surname" if (i == last_word and len(alpha) > 1) or self._titled(words, i) else "given"
            out.append(self.name_token(tok, role))
        return "".join(out)

    @staticmethod
    def _titled(words: list[str], i: int) -> bool:
        before = [w for w in words[:i] if w.strip() and w not in {".", ","}]
        return bool(before) and before[-1].lower() in _TITLES

    def _initial(self, letter: str) -> str:
        key = letter.lower()
        table = self.table.setdefault("initial", {})
        if key not in table:
            table[key] = string.ascii_lowercase[self._hash("initial", key) % 26]
        return match_case(letter, table[key])

    # --- shaped values -----------------------------------------------------------------------------

    def word(self, original: str, kind: str = "word") -> str:
        return match_case(original, self._pick(kind, original.lower(), tuple(_WORDS)))

    def _digits(self, kind: str, original: str, keep: int = 0) -> str:
        """Every digit after the first ``keep`` digits and every letter replaced; separators kept."""
        table = self.table.setdefault(kind, {})
        if original in table:
            return table[original]
        for salt in itertools.count():
            stream = iter(self._stream(kind, original, *([str(salt)] if salt else [])))
            out = []
            seen = 0
            for ch in original:
                if ch.isdigit():
                    seen += 1
                    out.append(ch if seen <= keep else str(next(stream) % 10))
                elif ch.isascii() and ch.isalpha():
                    letter = string.ascii_uppercase[next(stream) % 26]
                    out.append(letter if ch.isupper() else letter.lower())
                else:
                    out.append(ch)
            new = "".join(out)
            if new != original or salt >= 8:  # nothing to change (all kept) gives up after a few draws
                break
        table[original] = new
        return new

    def identifier(self, original: str) -> str:
        return self._digits("id", original)

    def phone(self, original: str) -> str:
        """Punctuation, ``+`` country code, a national trunk prefix (``0``) and length kept; a NANP area code
        and exchange start with 2-9; the national number starts with 0 only where the original did."""
        table = self.table.setdefault("phone", {})
        if original in table:
            return table[original]
        digits = re.sub(r"\D", "", original)
        international = original.lstrip().startswith("+")
        keep = _country_code_length(digits) if international else len(digits) - len(digits.lstrip("0"))
        nanp = digits.startswith("1") if international else len(digits) == 10 and digits[0] != "0"
        if not international and len(digits) == 11 and digits.startswith("1"):  # 1-800-555-0199
            nanp, keep = True, 1
        chars = list(self._digits("phone", original, keep))
        positions = [i for i, c in enumerate(chars) if c.isdigit()][keep:]
        if positions:
            first = positions[0]
            if original[first] == "0":
                chars[first] = "0"
            elif chars[first] == "0":
                chars[first] = str(1 + self._hash("phone", original) % 9)
        if nanp:
            for p in positions[0:1] + positions[3:4] if len(positions) >= 4 else []:
                if chars[p] in "01":
                    chars[p] = str(2 + int(chars[p]) * 3)
        table[original] = new = "".join(chars)
        return new

    def iban(self, original: str) -> str:
        """Country kept, the account part replaced letters-for-letters and digits-for-digits, new ISO 13616
        check digits (mod 97), the original grouping and separators kept."""
        table = self.table.setdefault("iban", {})
        if original in table:
            return table[original]
        compact = re.sub(r"[^0-9A-Za-z]", "", original).upper()
        if len(compact) < 5 or not compact[:2].isalpha() or not compact.isascii():
            return self.identifier(original)
        body = self._digits("iban-body", compact[4:])
        numeric = "".join(str(int(c, 36)) for c in body + compact[:2] + "00")
        check = 98 - int(numeric) % 97
        new = iter(f"{compact[:2]}{check:02d}{body}")
        out = []  # re-apply the original grouping
        for ch in original:
            if ch.isascii() and ch.isalnum():
                c = next(new)
                out.append(c.lower() if ch.islower() else c)
            else:
                out.append(ch)
        table[original] = result = "".join(out)
        return result

    def card(self, original: str) -> str:
        """Length, grouping and first digit kept; a new Luhn check digit."""
        if original in self.table.get("card", {}):
            return self.table["card"][original]
        digits = re.sub(r"\D", "", original)
        new = re.sub(r"\D", "", self._digits("card", original, keep=1))[: len(digits) - 1]
        total = 0
        for i, d in enumerate(reversed(new + "0")):
            n = int(d)
            if i % 2 == 1:
                n = n * 2 - 9 if n > 4 else n * 2
            total += n
        full = new + str((10 - total % 10) % 10)
        out, j = [], 0
        for ch in original:
            if ch.isdigit():
                out.append(full[j])
                j += 1
            else:
                out.append(ch)
        self.table["card"][original] = result = "".join(out)
        return result

    def gps(self, original: str) -> str:
        """Both numbers moved by the profile's one offset (up to half a degree), decimals kept."""
        m = re.match(r"\s*(-?\d+\.(\d+))(\s*,\s*)(-?\d+\.(\d+))\s*$", original)
        if not m:
            return self.identifier(original)
        dlat = (self._hash("gps", "lat") % 10_000) / 20_000 - 0.25
        dlon = (self._hash("gps", "lon") % 10_000) / 10_000 - 0.5
        lat = max(-90.0, min(90.0, float(m.group(1)) + dlat))
        lon = (float(m.group(4)) + dlon + 180) % 360 - 180
        return f"{lat:.{len(m.group(2))}f}{m.group(3)}{lon:.{len(m.group(5))}f}"

    def ip(self, original: str) -> str:
        parts = original.split(".")
        if len(parts) != 4 or not all(p.isdigit() for p in parts):
            return self.identifier(original)
        stream = iter(self._stream("ip", original))
        return ".".join([parts[0], *(str(next(stream) % 254 + 1) for _ in parts[1:])])
