"""Checkable facts in free text: numbers (with currency, scale words, percentages, negatives in
parentheses), dates, clock times and capitalized names; and whether another text supports them.

Used by the validator (is an answer supported by its evidence?) and by scoring (does a response
contradict a reference's key facts?). Deterministic, dependency-free, and deliberately tolerant
where writers differ (``$1.2 billion`` vs ``1,234 million``; ``12 March 2024`` vs ``2024-03-12``;
``three`` vs ``3``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DateFact",
    "Facts",
    "NameFact",
    "NumberFact",
    "TimeFact",
    "extract_facts",
    "unsupported_facts",
]

_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4, "may": 5,
    "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9,
    "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}  # fmt: skip
_WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
             "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"}  # fmt: skip
_SCALES = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "mm": 1e6, "billion": 1e9, "bn": 1e9,
    "b": 1e9, "trillion": 1e12, "tn": 1e12,
}  # fmt: skip
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
    "once": 1, "twice": 2, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "half": 0.5,
}  # fmt: skip
#: capitalized words that start sentences or are common enough not to be names
_NOT_NAMES = set(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "nor",
        "so",
        "yet",
        "for",
        "of",
        "on",
        "in",
        "at",
        "to",
        "by",
        "from",
        "with",
        "without",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "above",
        "after",
        "before",
        "during",
        "since",
        "until",
        "while",
        "when",
        "where",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "i",
        "you",
        "he",
        "she",
        "it",
        "we",
        "they",
        "me",
        "him",
        "her",
        "us",
        "them",
        "my",
        "your",
        "his",
        "its",
        "our",
        "their",
        "mine",
        "yours",
        "ours",
        "theirs",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "then",
        "than",
        "as",
        "if",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "done",
        "have",
        "has",
        "had",
        "not",
        "no",
        "yes",
        "none",
        "all",
        "any",
        "both",
        "each",
        "every",
        "either",
        "neither",
        "some",
        "many",
        "most",
        "more",
        "much",
        "few",
        "several",
        "also",
        "only",
        "just",
        "even",
        "still",
        "however",
        "therefore",
        "thus",
        "hence",
        "although",
        "though",
        "because",
        "according",
        "based",
        "per",
        "total",
        "overall",
        "approximately",
        "about",
        "around",
        "roughly",
        "nearly",
        "almost",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "mt",
        "jr",
        "sr",
        "inc",
        "ltd",
        "llc",
        "co",
        "corp",
        "plc",
        "dear",
        "hi",
        "hello",
        "thanks",
        "regards",
        "best",
        "q1",
        "q2",
        "q3",
        "q4",
        "fy",
        "h1",
        "h2",
        "am",
        "pm",
        "a.m",
        "p.m",
        "usd",
        "eur",
        "gbp",
        "jpy",
        "cny",
        "rmb",
    ]
)
_CURRENCY = r"(?:US\$|\$|€|£|¥|₹|USD|EUR|GBP|JPY|CNY|RMB|SGD|HKD|AUD|CAD)"
_NUM_BODY = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_NUMBER_RE = re.compile(
    rf"(?P<neg>\()?(?P<minus>-\s?)?(?P<cur>{_CURRENCY})?\s?(?P<body>{_NUM_BODY})(?P<ord>st|nd|rd|th)?"
    r"(?P<close1>\))?(?:\s?(?P<pct>%|percent\b|per cent\b|pct\b))?"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|mn|bn|tn|mm|[kmb])\b)?(?P<close>\))?",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b")
_NUM_DATE = re.compile(r"\b(\d{1,2})[/.\-](\d{1,2})[/.\-](\d{2}|\d{4})\b")
_MONTH_NAMES = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\.?,?(?:\s+(\d{{4}}))?\b", re.I)
_MDY = re.compile(rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?", re.I)
_MY = re.compile(rf"\b({_MONTH_NAMES})\.?,?\s+(\d{{4}})\b", re.I)
_TIME_RE = re.compile(
    r"\b(\d{1,2}):(\d{2})(?::\d{2})?\s*(?:([ap])\.?\s?m\b\.?)?|\b(\d{1,2})\s*([ap])\.?\s?m\b\.?", re.I
)
_NAME_RE = re.compile(
    r"\b[A-Z][\w'’.-]*[A-Za-z](?:\s+(?:[A-Z][\w'’.-]*[A-Za-z]|[A-Z]\.|(?:de|van|von|da|di|del|la|le|bin|al)\b))*"
)
_FILE_REF = re.compile(
    r"\[[^\]]*\]|\b[\w\-. ()&]+"
    r"\.(?:pdf|docx?|xlsx?|pptx?|csv|txt|md|eml|ics|json|jpe?g|png|heic|mp3|m4a|wav|mp4|mkv|mov)\b",
    re.I,
)


@dataclass(frozen=True)
class NumberFact:
    text: str
    value: float
    scale: float = 1.0
    percent: bool = False
    decimals: int = 0
    currency: str | None = None

    @property
    def magnitude(self) -> float:
        return self.value * self.scale


@dataclass(frozen=True)
class DateFact:
    text: str
    #: every (year, month, day) reading of the text; None parts are unknown (``March 2024``)
    readings: tuple[tuple[int | None, int | None, int | None], ...]


@dataclass(frozen=True)
class TimeFact:
    text: str
    #: minutes after midnight of every reading (``3:30`` may be 03:30 or 15:30)
    minutes: tuple[int, ...]


@dataclass(frozen=True)
class NameFact:
    text: str
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class Facts:
    numbers: tuple[NumberFact, ...]
    dates: tuple[DateFact, ...]
    times: tuple[TimeFact, ...]
    names: tuple[NameFact, ...]

    def all(self) -> list[NumberFact | DateFact | TimeFact | NameFact]:
        return [*self.numbers, *self.dates, *self.times, *self.names]


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for a, b in spans:
        for i in range(a, b):
            chars[i] = " "
    return "".join(chars)


def _month(word: str) -> int:
    return _MONTHS[word.lower().rstrip(".")[:9] if word.lower().rstrip(".") in _MONTHS else word.lower()[:3]]


def _year(text: str | None) -> int | None:
    if not text:
        return None
    y = int(text)
    return y + 2000 if y < 100 and len(text) == 2 else y


def _dates(text: str) -> tuple[list[DateFact], list[tuple[int, int]]]:
    found: list[DateFact] = []
    spans: list[tuple[int, int]] = []

    def taken(m: re.Match[str]) -> bool:
        return any(a < m.end() and m.start() < b for a, b in spans)

    for m in _ISO_DATE.finditer(text):
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if 1 <= mo <= 12 and 1 <= d <= 31:
            found.append(DateFact(m.group(0), ((y, mo, d),)))
            spans.append(m.span())
    for m in _NUM_DATE.finditer(text):
        if taken(m):
            continue
        a, b, y = int(m.group(1)), int(m.group(2)), _year(m.group(3))
        readings = tuple({(y, b, a), (y, a, b)} & {(y, mo, d) for mo in range(1, 13) for d in range(1, 32)})
        if readings:
            found.append(DateFact(m.group(0), tuple(sorted(readings, key=str))))
            spans.append(m.span())
    for rx, order in ((_DMY, "dmy"), (_MDY, "mdy")):
        for m in rx.finditer(text):
            if taken(m):
                continue
            if order == "dmy":
                d, mo, y = int(m.group(1)), _month(m.group(2)), _year(m.group(3))
            else:
                mo, d, y = _month(m.group(1)), int(m.group(2)), _year(m.group(3))
            if 1 <= d <= 31:
                found.append(DateFact(m.group(0), ((y, mo, d),)))
                spans.append(m.span())
    for m in _MY.finditer(text):
        if not taken(m):
            found.append(DateFact(m.group(0), ((int(m.group(2)), _month(m.group(1)), None),)))
            spans.append(m.span())
    return found, spans


def _times(text: str) -> tuple[list[TimeFact], list[tuple[int, int]]]:
    found, spans = [], []
    for m in _TIME_RE.finditer(text):
        if m.group(1) is not None:
            h, mi, ampm = int(m.group(1)), int(m.group(2)), (m.group(3) or "").lower()
        else:
            h, mi, ampm = int(m.group(4)), 0, m.group(5).lower()
        if h > 23 or mi > 59:
            continue
        if ampm == "p" and h < 12:
            readings: tuple[int, ...] = ((h + 12) * 60 + mi,)
        elif ampm == "a":
            readings = ((h % 12) * 60 + mi,)
        elif h <= 12:
            readings = tuple(sorted({h * 60 + mi, ((h % 12) + 12) * 60 + mi}))
        else:
            readings = (h * 60 + mi,)
        found.append(TimeFact(m.group(0).strip(), readings))
        spans.append(m.span())
    return found, spans


def _numbers(text: str) -> list[NumberFact]:
    out = []
    for m in _NUMBER_RE.finditer(text):
        body = m.group("body")
        start = m.start("body")
        if start > 0 and (text[start - 1].isalpha() or text[start - 1] == "_"):
            continue  # part of an identifier such as "Q3" or "v2"
        end = m.end("body")
        if (
            end < len(text)
            and text[end].isalpha()
            and not m.group("ord")
            and not m.group("scale")
            and not m.group("pct")
        ):
            continue  # "3D", "10x": not a quantity we can check reliably
        value = float(body.replace(",", ""))
        decimals = len(body.split(".")[1]) if "." in body else 0
        negative = bool(m.group("minus")) or (bool(m.group("neg")) and bool(m.group("close1") or m.group("close")))
        scale_word = (m.group("scale") or "").lower()
        if scale_word in ("m", "b", "k") and not m.group("cur"):
            scale_word = ""  # "5 m" is more often metres than millions
        out.append(
            NumberFact(
                text=m.group(0).strip(),
                value=-value if negative else value,
                scale=_SCALES.get(scale_word, 1.0),
                percent=bool(m.group("pct")),
                decimals=decimals,
                currency=m.group("cur"),
            )
        )
    for m in re.finditer(r"\b[A-Za-z]+\b", text):
        word = m.group(0).lower()
        if word in _NUMBER_WORDS and word not in ("second", "half", "first"):
            out.append(NumberFact(text=m.group(0), value=float(_NUMBER_WORDS[word])))
    return out


_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|[\"“(*•-]\s*)$")


def _names(text: str) -> list[NameFact]:
    out = []
    matches = list(_NAME_RE.finditer(text))
    mid_sentence = {m.group(0).split()[0] for m in matches if not _SENTENCE_START.search(text[: m.start()])}
    for m in matches:
        words = [w.strip(".'’") for w in m.group(0).split()]
        if len(words) == 1 and _SENTENCE_START.search(text[: m.start()]) and m.group(0) not in mid_sentence:
            continue  # a lone capitalized word opening a sentence is usually not a name
        while words and (words[0].lower() in _NOT_NAMES or _is_calendar(words[0])):
            words.pop(0)
        while words and (words[-1].lower() in _NOT_NAMES or _is_calendar(words[-1])):
            words.pop()
        tokens = tuple(
            w.lower().removesuffix("'s").removesuffix("’s")
            for w in words
            if len(w) > 1 and w.lower() not in _NOT_NAMES and not _is_calendar(w)
        )
        if tokens:
            out.append(NameFact(" ".join(words), tokens))
    return out


def _is_calendar(word: str) -> bool:
    w = word.lower().rstrip(".")
    return w in _MONTHS or w in _WEEKDAYS


def extract_facts(text: str) -> Facts:
    """Numbers, dates, times and names of a text (file references such as ``[notes.pdf]`` ignored)."""
    text = _FILE_REF.sub(lambda m: " " * len(m.group(0)), text or "")
    dates, date_spans = _dates(text)
    times, time_spans = _times(_mask(text, date_spans))
    rest = _mask(text, date_spans + time_spans)
    return Facts(tuple(_numbers(rest)), tuple(dates), tuple(times), tuple(_names(rest)))


# -- support -------------------------------------------------------------------------------------
def _number_supported(n: NumberFact, pool: list[NumberFact]) -> bool:
    tolerance = 0.5 * 10 ** (-n.decimals)
    for c in pool:
        for target in (c.magnitude, c.value):
            for mine in (n.magnitude, n.value):
                if abs(abs(target) - abs(mine)) <= tolerance * (n.scale if mine == n.magnitude else 1) + 1e-9:
                    return True
    return False


def _date_supported(d: DateFact, pool: list[DateFact], numbers: list[NumberFact]) -> bool:
    for mine in d.readings:
        for c in pool:
            for theirs in c.readings:
                if (
                    all(a is None or b is None or a == b for a, b in zip(mine, theirs, strict=True))
                    and mine[1] == theirs[1]
                ):
                    return True
        year, _, day = mine
        if mine[1] is None and year is not None and any(n.value == year for n in numbers):
            return True
        if day is None and year is not None and any(c.readings and c.readings[0][0] == year for c in pool):
            continue
    return False


def _name_supported(name: NameFact, haystack: str) -> bool:
    words = set(re.findall(r"[a-z0-9]+", haystack.lower().replace("'s", "").replace("’s", "")))
    return all(any(part in words for part in re.findall(r"[a-z0-9]+", t)) for t in name.tokens)


def unsupported_facts(claim: str, evidence: str) -> list[NumberFact | DateFact | TimeFact | NameFact]:
    """Facts of ``claim`` that ``evidence`` does not contain (normalized, tolerant of format)."""
    mine = extract_facts(claim)
    theirs = extract_facts(evidence)
    all_numbers = list(theirs.numbers) + [
        NumberFact(text=str(part), value=float(part))
        for d in theirs.dates
        for r in d.readings
        for part in r
        if part is not None
    ]
    missing: list[NumberFact | DateFact | TimeFact | NameFact] = []
    missing += [n for n in mine.numbers if not _number_supported(n, all_numbers)]
    missing += [d for d in mine.dates if not _date_supported(d, list(theirs.dates), all_numbers)]
    pool_minutes = {m for t in theirs.times for m in t.minutes}
    missing += [t for t in mine.times if not pool_minutes & set(t.minutes)]
    missing += [n for n in mine.names if not _name_supported(n, evidence)]
    return missing
