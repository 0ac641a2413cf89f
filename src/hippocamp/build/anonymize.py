"""One profile's anonymizer: learn who is named anywhere, then replace every occurrence everywhere.

Two passes over the same strings (`rewrite.texts_of` gives them, metadata included):

1. `learn(text)` runs the `Detector` and remembers the *name tokens* of every person found (given names and
   surnames, from a mail header's display name, a title, a greeting...), the tokens of e-mail local parts
   that belong to a displayed name, and the profile's other identifiers.
2. `freeze()` assigns pseudonyms in sorted order (so a run is reproducible whatever order files came in),
   and `edits(text)` returns the `Edit`s for a string: the detector's findings, replaced by kind, plus every
   occurrence of a learned name token (``Priya`` alone in a note, ``priya_raman_cv`` in a file name), in its
   own case. Tokens that are ordinary English words (``May``, ``Grace``) are replaced only capitalised.

`rename(relpath)` gives a file's new path (each folder and file name through `edits`, extension kept).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.build.pii import (
    _ORG_HINTS,
    _ORG_WORDS,
    _STOP_CAPS,
    _STREET_WORDS,
    Detector,
    Finding,
    given_names,
    is_ambiguous_word,
)
from hippocamp.build.pseudonyms import PUBLIC_MAIL_DOMAINS, Pseudonyms, match_case
from hippocamp.build.rewrite import Edit

__all__ = ["Anonymizer"]

_NAME_SOURCES_STRONG = {"display-name", "titled", "given-name", "surname-given", "signature", "greeting", "sign-off"}
_TITLES = {"mr", "mrs", "ms", "mx", "miss", "dr", "prof", "professor", "sir", "dame", "rev", "fr", "judge", "hon"}
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_LETTERS = re.compile(r"[^\W\d_]+")
# the parts of a camel-cased word: "priyaRaman", "PriyaRaman", "PRIYARaman"
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
_ORG_WORD = re.compile(_ORG_WORDS)
_STREET_WORD = re.compile(rf"(?<=\s){_STREET_WORDS}(?![A-Za-z])")


# identifiers found in pass 1 that are replaced wherever their exact text recurs, found or not
_LITERAL_KINDS = {"EMAIL", "PHONE", "IBAN", "CARD", "ID", "SSN", "HANDLE", "ADDRESS", "IP"}
_ORG_GENERIC = {w.lower() for w in _ORG_HINTS} | {"of", "the", "and"}


def _distinctive(word: str) -> bool:
    return (len(word) >= 4 and word[:1].isupper() and word not in _STOP_CAPS and word.lower() not in _ORG_GENERIC
            and not is_ambiguous_word(word) and not _ORG_WORD.fullmatch(word))  # fmt: skip


def _words(text: str) -> list[tuple[int, int, str]]:
    """Words of ``text`` with their spans; a camel-cased word also yields its parts (``PriyaRaman``)."""
    out = []
    for m in _LETTERS.finditer(text):
        word = m.group(0)
        out.append((m.start(), m.end(), word))
        if not word.islower() and not word.isupper() and not word.istitle():
            out += [(m.start() + p.start(), m.start() + p.end(), p.group(0)) for p in _CAMEL.finditer(word)]
    return out


def _bounded(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not before.isalnum() and not after.isalnum()


def _re2_any(literals: list[str]) -> Any:
    """One linear-time matcher (RE2) for many literal strings, case-insensitive; None for none."""
    if not literals:
        return None
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.case_sensitive = False
    options.max_mem = 256 << 20
    return re2.compile("|".join(re.escape(t) for t in literals), options)


@dataclass
class _Learned:
    roles: dict[str, Counter[str]] = field(default_factory=dict)  # token -> {"given": n, "surname": n}
    seen: Counter[str] = field(default_factory=Counter)  # kind -> count


class Anonymizer:
    """Detector + pseudonyms + the profile's learned names."""

    def __init__(self, pseudonyms: Pseudonyms, detector: Detector | None = None) -> None:
        self.pseudonyms = pseudonyms
        self.detector = detector or Detector()
        self._learned = _Learned()
        self._org_tokens: dict[str, str] = {}
        self._literal_rx: Any = None
        self._literal_kind: dict[str, str] = {}
        self._cache: dict[str, list[Finding]] = {}
        self.replacements: dict[tuple[str, str], str] = {}
        self._pending: set[tuple[str, str, str]] = set()
        self._roles_cache: dict[str, str] | None = None
        #: every identifier pass 1 met, as (kind, text): what the residual check looks for in the output
        self.found: set[tuple[str, str]] = set()

    # --- pass 1 -------------------------------------------------------------------------------------

    def _find(self, text: str) -> list[Finding]:
        if len(text) > 20_000:
            return self.detector.find(text)
        found = self._cache.get(text)
        if found is None:
            if len(self._cache) > 200_000:
                self._cache.clear()
            found = self._cache[text] = self.detector.find(text)
        return found

    def learn(self, text: str) -> None:
        """Pass 1 over a string: run the detector and learn what it found."""
        for f in self._find(text):
            self.learn_found(f.kind, f.text, f.source)

    def learn_found(self, kind: str, text: str, source: str) -> None:
        """Pass 1 from a finding made elsewhere (the build's extraction workers)."""
        self._learned.seen[kind] += 1
        self._pending.add((kind, text, source))
        self.found.add((kind, text))
        if kind == "PERSON" and source in _NAME_SOURCES_STRONG:
            self._learn_person(text, titled=source == "titled")
        elif kind in ("EMAIL", "URL", "HANDLE"):
            self._learn_email(text.lstrip("@"))

    def _learn_person(self, name: str, titled: bool = False) -> None:
        words = [w for w in _WORD.findall(name) if w.lower() not in _TITLES and len(w) > 1]
        if not words:
            return
        comma = "," in name
        titled = titled or bool(re.match(r"\s*(?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof|Professor|Sir|Dame|Rev)\b", name))
        for i, w in enumerate(words):
            for part in w.split("-"):
                if len(part) < 2:
                    continue
                if comma:
                    role = "surname" if i == 0 else "given"
                elif titled and len(words) == 1:
                    role = "surname"
                else:
                    role = "surname" if (i == len(words) - 1 and len(words) > 1) else "given"
                self._learned.roles.setdefault(part.lower(), Counter())[role] += 1
                self._roles_cache = None

    def _learn_email(self, address: str) -> None:
        # priya.raman@...: a known given name and a second word in the local part are a person's name
        parts = [x for x in re.split(r"[._-]", address.split("@", 1)[0]) if x]
        if len(parts) == 2 and all(x.isalpha() and len(x) > 1 for x in parts) and parts[0].lower() in given_names():
            self._learn_person(f"{parts[0].capitalize()} {parts[1].capitalize()}")

    @property
    def name_tokens(self) -> dict[str, str]:
        """Every learned name token and its role (the more frequent one)."""
        if self._roles_cache is not None:
            return self._roles_cache
        out = {}
        for token, counts in self._learned.roles.items():
            out[token] = "surname" if counts["surname"] > counts["given"] else "given"
        self._roles_cache = out
        return out

    # --- between the passes ---------------------------------------------------------------------------

    def freeze(self) -> None:
        """Assign every learned name token its pseudonym (sorted order: reproducible) and build the matcher."""
        tokens = self.name_tokens
        self.pseudonyms.avoid |= set(tokens)
        for token in sorted(tokens):
            self.pseudonyms.name_token(token, tokens[token])
        # every identifier met in pass 1 gets its pseudonym now, in sorted order: the table does not depend on
        # the order files are rewritten in (or on which worker rewrites them)
        for kind, text, source in sorted(self._pending):
            self._replace(Finding(kind, 0, len(text), text, 1.0, source))
        self._pending.clear()
        self._org_tokens = self._learn_org_tokens()
        literals = sorted({t for k, t in self.found if k in _LITERAL_KINDS and len(t) >= 5}, key=lambda t: (-len(t), t))
        self._literal_kind = {t.lower(): k for k, t in sorted(self.found) if k in _LITERAL_KINDS}
        self._literal_rx = _re2_any(literals)

    def _learn_org_tokens(self) -> dict[str, str]:
        """The distinctive words of organisations found in pass 1 (``Meridia`` of ``Hotel Meridia``), each with
        its pseudonym word: replaced wherever they stand capitalised."""
        out: dict[str, str] = {}
        for kind, text in sorted(self.found):
            if kind != "ORG":
                continue
            for word in _WORD.findall(text):
                if _distinctive(word) and word.lower() not in self.name_tokens:
                    out[word.lower()] = self.pseudonyms.word(word, "org")
        return out

    # --- the private state: secret, table, learned names -----------------------------------------------

    def save(self, path: Path) -> None:
        """Write the anonymizer's state (the secret and the mapping: private, never released)."""
        data = {"version": 1, "secret": self.pseudonyms.secret.hex(), "table": self.pseudonyms.table,
                "avoid": sorted(self.pseudonyms.avoid), "found": sorted(self.found),
                "roles": {t: dict(c) for t, c in sorted(self._learned.roles.items())}}  # fmt: skip
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path, detector: Detector | None = None) -> Anonymizer:
        data = json.loads(path.read_text(encoding="utf-8"))
        made = cls(Pseudonyms(bytes.fromhex(data["secret"]), data["table"], data["avoid"]), detector)
        made._learned.roles = {t: Counter(c) for t, c in data["roles"].items()}
        made.found = {(k, t) for k, t in data.get("found", [])}
        made.freeze()
        return made

    def originals(self) -> list[str]:
        """Lower-cased original identifiers to look for in an output (the residual check): every name token
        of three letters or more and every other identifier the table holds, except pseudonyms themselves."""
        table = self.pseudonyms.table
        new = {v.lower() for kind in table.values() for v in kind.values()}
        names = {t for t in self.name_tokens if len(t) >= 3 and not is_ambiguous_word(t)}
        others = {text.lower() for kind, text in self.found if kind not in ("PERSON", "ORG") and len(text) >= 5}
        return sorted((names | others) - new)

    # --- pass 2 -------------------------------------------------------------------------------------

    def edits(self, text: str) -> list[Edit]:
        """The edits that anonymize ``text`` (non-overlapping, in order)."""
        if not text:
            return []
        spans: list[tuple[int, int, str]] = []
        for f in self._find(text):
            new = self._replace(f)
            if new is not None and new != f.text:
                spans.append((f.start, f.end, new))
                self.replacements[(f.kind, f.text)] = new
        taken = [(s, e) for s, e, _ in spans]

        def free(start: int, end: int) -> bool:
            return all(end <= s or start >= e for s, e in taken)

        if self._literal_rx is not None:
            for m in self._literal_rx.finditer(text):
                start, end = m.span()
                if not _bounded(text, start, end) or not free(start, end):
                    continue
                original = text[start:end]
                kind = self._literal_kind.get(original.lower(), "ID")
                new = self._replace(Finding(kind, start, end, original, 1.0, "literal"))
                if new is not None and new != original:
                    spans.append((start, end, new))
                    taken.append((start, end))
        for start, end, word in _words(text):
            key = word.lower()
            if key in self.name_tokens:
                if is_ambiguous_word(word) and not (word[:1].isupper() and word[1:].islower()):
                    continue
                new = self.pseudonyms.name_token(word, self.name_tokens[key])
                kind = "NAME"
            elif key in self._org_tokens and (word.istitle() or word.isupper()):
                new = match_case(word, self._org_tokens[key])
                kind = "ORG"
            else:
                continue
            if free(start, end):
                spans.append((start, end, new))
                taken.append((start, end))
                self.replacements[(kind, word)] = new
        spans.sort()
        return [Edit(s, e, new) for s, e, new in spans]

    def apply(self, text: str) -> str:
        out, last = [], 0
        for e in self.edits(text):
            out += [text[last : e.start], e.new]
            last = e.end
        return "".join(out) + text[last:]

    def rename(self, relpath: str) -> str:
        """A file's new path: each folder and the file's stem through `apply`; the extension kept."""
        parts = relpath.split("/")
        out = []
        for i, part in enumerate(parts):
            stem, dot, ext = part.rpartition(".") if i == len(parts) - 1 and "." in part[1:] else (part, "", "")
            # the stem is read with its underscores as spaces (same offsets), and only what the edits replace
            # changes: a replacement uses the file's separators, the rest of the name keeps its own
            pieces, last = [], 0
            for e in self.edits(stem.replace("_", " ")):
                repl = e.new.replace(" ", "_") if "_" in stem[e.start : e.end] or " " not in stem else e.new
                pieces += [stem[last : e.start], repl]
                last = e.end
            new = "".join(pieces) + stem[last:]
            out.append(f"{new}{dot}{ext}" if dot else new)
        return "/".join(out)

    # --- one finding -------------------------------------------------------------------------------

    def _names_in(self, text: str) -> str:
        """Known name tokens inside a string (an e-mail local part, a handle) replaced; other words kept."""
        out, last = [], 0
        for start, end, word in _words(text):
            if word.lower() in self.name_tokens:
                out += [text[last:start], self.pseudonyms.name_token(word, self.name_tokens[word.lower()])]
                last = end
        return "".join(out) + text[last:] if out else text

    def _replace(self, f: Finding) -> str | None:
        p = self.pseudonyms
        kind, text = f.kind, f.text
        if kind == "PERSON":
            return p.person(text, self.name_tokens)
        if kind == "EMAIL":
            return self._email(text)
        if kind == "PHONE":
            return p.phone(text)
        if kind == "IBAN":
            return p.iban(text)
        if kind == "CARD":
            return p.card(text)
        if kind in ("ID", "SSN"):
            return p.identifier(text)
        if kind == "IP":
            return p.ip(text)
        if kind == "GPS":
            return p.gps(text)
        if kind in ("HANDLE", "URL"):
            return self._handle(text)
        if kind == "ADDRESS":
            return self._address(text)
        if kind == "ORG":
            return self._org(text)
        return None

    def _email(self, addr: str) -> str:
        local, _, domain = addr.partition("@")
        new_local = self._local(local)
        if domain.lower() in PUBLIC_MAIL_DOMAINS:
            return f"{new_local}@{domain}"
        labels = domain.split(".")
        tld = 2 if len(labels) > 2 and len(labels[-1]) == 2 and len(labels[-2]) <= 3 else 1
        head = [self._label(x) for x in labels[:-tld]]
        return f"{new_local}@{'.'.join([*head, *labels[-tld:]])}"

    def _local(self, local: str) -> str:
        replaced = self._names_in(local)
        if replaced != local:
            return replaced
        table = self.pseudonyms.table.setdefault("email-local", {})
        if local not in table:
            letters = re.sub(r"[^A-Za-z]", "", local)
            base = self.pseudonyms.word(letters or "x", "mailbox").lower()
            digits = "".join(c for c in self.pseudonyms.identifier(local) if c.isdigit())[:3]
            table[local] = base + digits
        return table[local]

    def _label(self, label: str) -> str:
        named = self._names_in(label)
        if named != label:
            return named
        return "-".join(self.pseudonyms.word(x, "domain").lower() if x else x for x in label.split("-"))

    def _handle(self, text: str) -> str:
        at = "@" if text.startswith("@") else ""
        body = text[len(at) :]
        named = self._names_in(body)
        if named != body:
            return at + named
        table = self.pseudonyms.table.setdefault("handle", {})
        if body not in table:
            digits = "".join(c for c in self.pseudonyms.identifier(body) if c.isdigit())[:2]
            table[body] = match_case(body, self.pseudonyms.word(body, "handle").lower() + digits)
        return at + table[body]

    def _address(self, text: str) -> str:
        p = self.pseudonyms
        m = re.match(r"(\d{1,5})([A-Za-z]?,?\s+)(.*)$", text, re.S)
        if not m:
            return p.identifier(text)
        number = p._digits("house", m.group(1))
        rest = m.group(3)
        # the street's name (the words before the street word) becomes a pseudonym street name, the same with
        # or without a unit after it; the rest keeps its words (street word, unit, city, state), with the
        # digits of units and post codes replaced
        word = _STREET_WORD.search(rest)
        name, tail = (rest[: word.start()], rest[word.start() :]) if word else ("", rest)
        if name.strip():
            name = p.word(" ".join(name.split()), "street") + name[len(name.rstrip()) :]
        shift = 1 + p._hash("zip", text) % 9  # never 0: that would keep the post code
        tail = re.sub(r"\d", lambda d: str((int(d.group(0)) + shift) % 10), tail)
        return f"{number}{m.group(2)}{name}{tail}"

    def _org(self, text: str) -> str:
        """Each distinctive word replaced (``Hotel Meridia`` -> ``Hotel Juniper``, ``University of Leeds`` ->
        ``University of Maple``); generic organisation words and people's names (through the name table) kept
        in shape."""
        out, last = [], 0
        for m in _WORD.finditer(text):
            word = m.group(0)
            if word.lower() in self.name_tokens:
                new = self.pseudonyms.name_token(word, self.name_tokens[word.lower()])
            elif _distinctive(word) or (m.start() == 0 and word not in _STOP_CAPS and word.lower() not in _ORG_GENERIC):
                new = self.pseudonyms.word(word, "org")
            else:
                continue
            out += [text[last : m.start()], new]
            last = m.end()
        return "".join(out) + text[last:]
