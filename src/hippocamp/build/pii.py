"""Finding personal identifiers in text: Presidio's recognizers, with a name finder that needs no NER model.

`Detector.find(text)` returns non-overlapping `Finding`s of these kinds:

- from Presidio (``presidio-analyzer``, Microsoft's PII analyzer) and its validated patterns: ``EMAIL``
  (checked against a public-suffix list that ships with ``tldextract``; never fetched), ``PHONE`` (Google's
  ``phonenumbers`` matcher over several regions), ``IBAN`` (checksum), ``CARD`` (Luhn), ``IP``, ``SSN``
  (US, with Presidio's invalid-number rules), ``URL`` (only profile links that carry a handle are kept);
- from hippocamp's recognizers, registered in the same Presidio registry: ``PERSON`` (see below),
  ``ADDRESS`` (a house number, a street name and a street word, with an optional unit, city, state and
  post code), ``ORG`` (capitalised words ending in an organisation word: Ltd, LLC, Clinic, University...),
  ``HANDLE`` (``@name``), ``ID`` (an identifier after a word that says so: passport, account, member,
  policy, patient, employee, licence...), ``GPS`` (a decimal latitude, longitude pair).

Amounts, dates and times are evidence that benchmark questions ask about: a date (``2024-06-01``,
``03.06.2024``, ``20240601``) or a span of years is never an ``ID`` or a ``PHONE``, whatever label stands
before it (`is_date_like`).

No English NER model installs from a package here (spaCy's trained pipelines download from GitHub), so
Presidio runs over spaCy's blank English tokenizer, and people are found by rules hippocamp measures
(`bench/build.py`): a title and a capitalised word (``Dr. Okafor``); a known given name followed by
capitalised words (``Priya Raman``, ``Mira J. Lindqvist``); ``Surname, Given``; a display name in front of
an e-mail address (``"Tomas Novak" <tn@...>``, any name, known or not); a known given name after a
greeting or before a sign-off. Known given names are the ASCII given names of Faker's locales (~6,800).
Words that are also ordinary English (``May``, ``Will``, ``Grace``, months, weekdays) count only next to
another name part.

A profile-level pass (`build.anonymize`) then turns the people found anywhere into name *tokens*, and
replaces every later occurrence of those tokens, in any case and inside file names, so a name first seen
in a mail header is also replaced where it stands alone in a note.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Detector", "Finding", "given_names", "is_ambiguous_word", "is_date_like"]

KINDS = ("PERSON", "EMAIL", "PHONE", "ADDRESS", "IBAN", "CARD", "ID", "HANDLE", "ORG", "URL", "IP", "SSN", "GPS")

# kinds that win an overlap, most specific first
_ORDER = ("EMAIL", "IBAN", "CARD", "SSN", "URL", "GPS", "ADDRESS", "ID", "IP", "PHONE", "HANDLE", "PERSON", "ORG")
_PRIORITY = {k: i for i, k in enumerate(_ORDER)}

_PRESIDIO_KINDS = {
    "EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "IBAN_CODE": "IBAN", "CREDIT_CARD": "CARD",
    "IP_ADDRESS": "IP", "US_SSN": "SSN", "URL": "URL",
}  # fmt: skip

_LOCALES = ("en_US en_GB en_IE en_IN en_NZ de_DE de_AT fr_FR fr_CH es_ES es_MX it_IT pt_BR pt_PT nl_NL pl_PL "
            "sv_SE da_DK no_NO fi_FI cs_CZ hu_HU ro_RO tr_TR ru_RU uk_UA el_GR hi_IN ja_JP zh_CN ko_KR vi_VN "
            "id_ID fa_IR ar_AA he_IL yo_NG zu_ZA sw ka_GE hr_HR sk_SK sl_SI et_EE lt_LT lv_LV").split()  # fmt: skip

# ordinary English words that are also given names or surnames: they count only next to another name part
_AMBIGUOUS = set(
    """january february march april may june july august september october november december monday tuesday
    wednesday thursday friday saturday sunday will mark grace faith hope joy rose lily ivy bill art page case
    long young black white brown green gray grey hunter king rich ray dawn summer autumn winter sunny frank guy
    jack pat sue don rob max hall lane street bishop church cook baker mason carter miles chase dean drew
    earl gene glen holly jean jewel june kay lee love major mo nick norma pearl penny price reed rusty sandy
    skip star sterling stone storm tanner terry van ward wade west wood young bay cliff crystal destiny
    eve fern hazel heather iris jade jasmine laurel olive poppy river sky violet willow angel august
    bond bush cash clay cole cross dale day duke fox gay gill ho le ma min park pope power ross say sharp
    short small strong swift tan tom wolf via cam al ben can bo may-be my us said amber ruby daisy lucky junior
    christian""".split()
)
_TITLES = r"(?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof|Professor|Sir|Dame|Rev|Fr|Judge|Hon)"
_GREETINGS = r"(?:Hi|Hello|Hey|Dear|Thanks|Thank you|Cheers|Best|Regards|Love|Yours|Sincerely|Warmly|Ciao|Bye)"
_CAP = r"[A-Z][a-z]+(?:['’-][A-Z]?[a-z]+)*"
_STOP_CAPS = set(
    """The A An And Or But If In On At To For Of From By With Without About As Is Are Was Were Be This That These
    Those It Its My Your Our Their His Her We You They I He She Me Us Them Not No Yes Re Fwd Fw Subject Date
    Street St Road Rd Avenue Ave Lane Ln Drive Dr Court Ct Place Pl Way Boulevard Blvd Hospital Clinic School
    University College Bank Office Team Group Inc Ltd LLC Company Project Meeting Notes Report Invoice Receipt
    Total Budget Plan Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May
    June July August September October November December Today Tomorrow Yesterday Morning Evening Night Please
    Also Then So Just Here There When Where What Who Why How All Any Some Every Each New Old Next Last First
    Call Email Phone Mobile Tel Fax Address Note Dinner Lunch Breakfast Trip Flight Hotel Home Work""".split()
)
_ORG_WORDS = (
    r"(?:Inc|LLC|L\.L\.C\.|Ltd|Limited|GmbH|AG|SA|S\.A\.|BV|B\.V\.|PLC|LLP|Corp|Corporation|Co\.|Partners|"
    r"Associates|Group|Holdings|Clinic|Hospital|Medical Center|Medical Centre|Dental|Dentistry|Veterinary|Vets|"
    r"Animal Hospital|Pharmacy|School|Academy|University|College|Institute|Bank|Credit Union|Insurance|"
    r"Law|Legal|Solicitors|Attorneys|Consulting|Consultants|Studio|Studios|Design|Architects|Accountants|"
    r"Realty|Properties|Lettings|Estates|Foundation|Trust|Society|Club|Surgery|Practice)"
)
# words that make a sender's display name an organisation's ("Hotel Meridia", "Lantern Inn Bookings")
_ORG_HINTS = set(
    """hotel hotels inn hostel resort restaurant cafe café bar bistro shop store market supermarket library museum
    gym fitness airline airlines airways air rail railway trains travel tours bookings booking reservations support
    team newsletter news service services customer customers club centre center pharmacy clinic hospital dental
    bank insurance school academy university college studio studios gallery theatre theater cinema council
    office agency inc ltd llc gmbh group company co corp foundation trust society association church""".split()
)
_STREET_WORDS = (
    r"(?:Street|St\.?|Avenue|Ave\.?|Road|Rd\.?|Lane|Ln\.?|Drive|Dr\.?|Court|Ct\.?|Boulevard|Blvd\.?|Way|Place|"
    r"Pl\.?|Terrace|Close|Crescent|Square|Sq\.?|Parkway|Pkwy\.?|Highway|Hwy\.?|Row|Gardens|Grove|Mews|Hill|"
    r"Strasse|Straße|Str\.|Rue|Calle|Via|Weg|Gasse|Platz|Laan|Gracht)"
)
_ID_WORDS = (
    r"(?:passport|licen[cs]e|driver'?s? licen[cs]e|ID|identity|national insurance|NI|NHS|SSN|social security|"
    r"tax|TIN|VAT|account|acct|a/c|member(?:ship)?|policy|customer|client|patient|employee|staff|student|"
    r"badge|card|routing|sort code|loyalty|reference|ref|confirmation|booking|reservation|PNR)"
)


@dataclass(frozen=True)
class Finding:
    """One identifier in a text: its kind, where it is (``text[start:end]``), how sure, and who found it."""

    kind: str
    start: int
    end: int
    text: str
    score: float
    source: str


@functools.cache
def given_names() -> frozenset[str]:
    """Lower-cased ASCII given names of Faker's locales: the name finder's gazetteer."""
    names: set[str] = set()
    for loc in _LOCALES:
        try:
            provider = importlib.import_module(f"faker.providers.person.{loc}").Provider
        except ImportError:
            continue
        for attr in ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary"):
            values = getattr(provider, attr, ())
            for v in values if isinstance(values, list | tuple | dict) else list(values):
                if isinstance(v, str) and v.isascii() and v.isalpha() and len(v) > 1:
                    names.add(v.lower())
    return frozenset(names)


# interjections and chat words that start a sentence before a name ("Wow, Caroline!", "Congrats, Jon")
_INTERJECTIONS = set(
    """wow woah whoa cool yeah yep yup yes no nope ok okay thanks thank thx congrats congratulations hey hi hello
    bye awesome sure agreed absolutely definitely nice great gotcha oh ah aw aww haha lol omg sorry please well
    right exactly totally amazing wonderful true indeed alright hmm um uh welcome cheers love bravo fantastic
    perfect brilliant lovely sweet dear morning evening night afternoon sounds good glad happy ugh yikes damn
    gosh hooray yay whew phew oops argh shh psst meh nah sup howdy hiya goodbye farewell""".split()
)


@functools.cache
def common_words() -> frozenset[str]:
    """Lower-cased ordinary English words: Faker's English word list (~1,000 common words), spaCy's English
    stop words, interjections and the ambiguous name words. A name finder's rule that would make one of
    them a name part does not fire, and a learned name part that is one is replaced only capitalised."""
    words = set(_AMBIGUOUS) | _INTERJECTIONS
    try:
        from faker.providers.lorem.en_US import Provider as Lorem

        words |= {w.lower() for w in Lorem.word_list}
    except ImportError:
        pass
    try:
        from spacy.lang.en.stop_words import STOP_WORDS

        words |= {w.lower() for w in STOP_WORDS}
    except ImportError:
        pass
    return frozenset(words)


def is_ambiguous_word(token: str) -> bool:
    """True for name parts that are also ordinary English words (``May``, ``Will``, ``Brown``, ``Summer``)."""
    return token.lower() in common_words()


def _known_given(token: str) -> bool:
    return token.lower() in given_names() and token not in _STOP_CAPS


# --- hippocamp's recognizers, as plain functions over the text -------------------------------------------


_RE_TITLED = re.compile(rf"\b{_TITLES}\.?\s+((?:{_CAP}[ \t]+)?{_CAP})")
_RE_CAPSEQ = re.compile(rf"\b{_CAP}(?:[ \t]+(?:[A-Z]\.[ \t]+)?{_CAP}){{1,3}}")
_RE_LAST_FIRST = re.compile(rf"\b({_CAP}),[ \t]+({_CAP})\b")
_RE_DISPLAY = re.compile(
    rf"(?:\"|')?\b({_CAP}(?:[ \t]+(?:[A-Z]\.[ \t]*)?{_CAP}){{0,3}})(?:\"|')?[ \t]*<[^<>@\s]+@[^<>\s]+>"
)
_RE_GREETING = re.compile(rf"\b{_GREETINGS}[ ,]+({_CAP})\b")
_RE_SIGNOFF = re.compile(rf"^[-–—~ \t]*({_CAP})((?:[ \t]+{_CAP})?)[ \t]*\r?$", re.M)
_RE_GREETING_WORD = re.compile(rf"{_GREETINGS}|Kind|Regards|Wishes")
_RE_AFTER_SIGNOFF = re.compile(
    rf"\b(?:Thanks|Thank you|Cheers|Best|Best wishes|Regards|Kind regards|Love|Sincerely|Warmly|Yours),?[ \t]*\r?\n"
    rf"[ \t]*({_CAP}(?:[ \t]+{_CAP})?)[ \t]*(?:\r?\n|$)"
)
_RE_ADDRESS = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?,?\s+(?:{_CAP}\s+){{0,3}}{_CAP}\s+{_STREET_WORDS}(?![A-Za-z])"
    rf"(?:,?\s+(?:Apt|Apartment|Unit|Suite|Flat|#)\.?\s*\w+)?"
    rf"(?:,\s+{_CAP}(?:\s+{_CAP}){{0,2}}(?:,?\s+[A-Z]{{2}}\b)?(?:\s+\d{{5}}(?:-\d{{4}})?)?)?"
    rf"(?:,?\s+[A-Z]{{1,2}}\d[A-Z\d]?\s+\d[A-Z]{{2}}\b)?"
)
_RE_ORG = re.compile(
    rf"\b(?:{_CAP}|[A-Z]{{2,}})(?:[ &]+(?:{_CAP}|[A-Z]{{2,}}|&|of)){{0,4}}(?<!\bof)\s+{_ORG_WORDS}(?!\w)"
    r"(?:(?:(?<=Inc)|(?<=Ltd)|(?<=Corp))\.)?"
)
_RE_UNIVERSITY = re.compile(rf"\b(?:University|College|Bank|Institute) of (?:{_CAP})(?:\s+{_CAP}){{0,2}}")
_RE_HANDLE = re.compile(r"(?<![\w@.])@[A-Za-z0-9_](?:[A-Za-z0-9_.]{1,28}[A-Za-z0-9_])\b")
_RE_ID = re.compile(
    rf"(?i:\b{_ID_WORDS})(?:\s+(?i:number|no\.?|num|#|id|code))?\s*[:#]?\s*"
    r"((?=[A-Z0-9-]*\d[A-Z0-9-]*\d[A-Z0-9-]*\d)[A-Z0-9][A-Z0-9-]{4,22}[A-Z0-9])\b"
)
# a pair, not two values of a longer list of decimals ("rates 1.0834, 1.2712, 0.8571")
_RE_GPS = re.compile(r"(?<![\d.])(?<!\d,)(?<!\d, )(-?\d{1,2}\.\d{4,}),\s*(-?\d{1,3}\.\d{4,})(?!\d)(?!\.\d)(?!,\s*-?\d)")
# a calendar date (ISO, day-month-year either way round, compact), with or without a time, or a span of years:
# never an identifier or a phone number, however it is labelled
_RE_DATE = re.compile(
    r"(?P<y>(?:19|20)\d\d)(?P<s>[-/.]?)(?P<m>\d\d?)(?P=s)(?P<d>\d\d?)(?:[T ]\d\d?(?::\d\d){0,2})?"
    r"|(?P<a>\d\d?)(?P<t>[-/.])(?P<b>\d\d?)(?P=t)(?:(?:19|20)?\d\d)(?:[T ]\d\d?(?::\d\d){0,2})?"
    r"|(?:19|20)\d\d[-/](?:19|20)\d\d"
)
_RE_QUAD = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")  # an IP address or a net mask, not a phone number
_RE_PROFILE_URL = re.compile(
    r"(?i)\b(?:https?://)?(?:www\.)?(?:linkedin\.com/in|github\.com|twitter\.com|x\.com|instagram\.com|"
    r"facebook\.com|tiktok\.com/@|medium\.com/@|youtube\.com/@)/?([A-Za-z0-9_.-]{2,60})"
)


def is_date_like(value: str) -> bool:
    """True for a date (``2024-06-01``, ``03.06.2024``, ``20240601``, ``2024-06-01T18``) or a span of years
    (``1999-2024``): evidence that the build must keep, never an identifier or a phone number."""
    v = value.strip()
    m = _RE_DATE.match(v)
    if m is None or v[m.end() : m.end() + 1].isdigit():
        return False
    if m.group("y"):
        month, day = m.group("m"), m.group("d")
        if not m.group("s") and (len(month), len(day)) != (2, 2):
            return False
        return 1 <= int(month) <= 12 and 1 <= int(day) <= 31
    if m.group("a"):
        low, high = sorted((int(m.group("a")), int(m.group("b"))))
        return low >= 1 and low <= 12 and high <= 31
    return True


def _person_spans(text: str) -> Iterable[tuple[int, int, float, str]]:
    for m in _RE_TITLED.finditer(text):
        if m.group(1).split()[0] not in _STOP_CAPS:
            yield m.start(1), m.end(1), 0.85, "titled"
    for m in _RE_DISPLAY.finditer(text):
        words = m.group(1).split()
        if any(w in _STOP_CAPS or w.lower() in _ORG_HINTS for w in words):
            continue  # "Hotel Meridia" <...>, "The Lantern Inn" <...>: an organisation (see _own_findings)
        if len(words) >= 2 or _known_given(words[0]):
            yield m.start(1), m.end(1), 0.9, "display-name"
    for m in _RE_CAPSEQ.finditer(text):
        run = list(re.finditer(r"\S+", m.group(0)))
        # find the first known given name in the run; the name is it and the capitalised words after it, up to
        # the first word that is never a name ("Priya Raman Meeting Notes")
        for i, word in enumerate(run):
            w = word.group(0)
            if w.rstrip(".") in _STOP_CAPS:
                continue
            if _known_given(w) and i + 1 < len(run):
                tail = list(itertools.takewhile(lambda x: x.group(0) not in _STOP_CAPS, run[i + 1 :]))
                if not tail:
                    break
                if is_ambiguous_word(w) and all(is_ambiguous_word(t.group(0)) for t in tail):
                    break
                yield m.start() + word.start(), m.start() + tail[-1].end(), 0.75, "given-name"
                break
    for m in _RE_LAST_FIRST.finditer(text):
        last, first = m.group(1), m.group(2)
        greeting = _RE_GREETING_WORD.fullmatch(last)  # "Thanks, Elena": a greeting, not a surname
        if (_known_given(first) and not is_ambiguous_word(first) and last not in _STOP_CAPS and not greeting
                and not is_ambiguous_word(last)):  # fmt: skip
            yield m.start(), m.end(), 0.6, "surname-given"
    for m in _RE_GREETING.finditer(text):
        w = m.group(1)
        if _known_given(w) and not is_ambiguous_word(w):
            yield m.start(1), m.end(1), 0.6, "greeting"
    for m in _RE_AFTER_SIGNOFF.finditer(text):
        if m.group(1).split()[0] not in _STOP_CAPS:
            yield m.start(1), m.end(1), 0.7, "signature"
    for m in _RE_SIGNOFF.finditer(text):
        w = m.group(1)
        if _known_given(w) and not is_ambiguous_word(w) and m.start() > 0:
            yield m.start(1), m.end(2), 0.5, "sign-off"


def _own_findings(text: str) -> Iterable[Finding]:
    for start, end, score, how in _person_spans(text):
        span = text[start:end]
        start, end = start + len(span) - len(span.lstrip()), end - len(span) + len(span.rstrip())
        yield Finding("PERSON", start, end, text[start:end], score, how)
    for m in _RE_ADDRESS.finditer(text):
        yield Finding("ADDRESS", m.start(), m.end(), m.group(0), 0.8, "street")
    for m in _RE_ORG.finditer(text):
        words = m.group(0).split()
        if len(words) >= 2 and words[0] not in _STOP_CAPS:
            yield Finding("ORG", m.start(), m.end(), m.group(0), 0.6, "organisation-word")
    for m in _RE_DISPLAY.finditer(text):
        words = m.group(1).split()
        if len(words) >= 2 and any(w.lower() in _ORG_HINTS for w in words):
            yield Finding("ORG", m.start(1), m.end(1), m.group(1), 0.7, "display-org")
    for m in _RE_UNIVERSITY.finditer(text):
        yield Finding("ORG", m.start(), m.end(), m.group(0), 0.6, "institution-of")
    for m in _RE_HANDLE.finditer(text):
        yield Finding("HANDLE", m.start(), m.end(), m.group(0), 0.7, "handle")
    for m in _RE_ID.finditer(text):
        if is_date_like(m.group(1)):
            continue
        yield Finding("ID", m.start(1), m.end(1), m.group(1), 0.7, "labelled-id")
    for m in _RE_GPS.finditer(text):
        lat, lon = float(m.group(1)), float(m.group(2))
        if -90 <= lat <= 90 and -180 <= lon <= 180:
            yield Finding("GPS", m.start(), m.end(), m.group(0), 0.8, "coordinates")
    for m in _RE_PROFILE_URL.finditer(text):
        yield Finding("URL", m.start(1), m.end(1), m.group(1), 0.8, "profile-link")


# --- Presidio ----------------------------------------------------------------------------------------


@functools.cache
def _analyzer() -> Any:
    """Presidio's analyzer over spaCy's blank English tokenizer, without any network access."""
    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)
    import spacy
    import tldextract
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UsSsnRecognizer,
    )

    offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    class OfflineEmail(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return bool(offline(pattern_text.rsplit("@", 1)[-1]).suffix)

    class BlankEnglish(SpacyNlpEngine):
        def __init__(self) -> None:
            super().__init__(models=[{"lang_code": "en", "model_name": "blank:en"}],
                             ner_model_configuration=NerModelConfiguration())  # fmt: skip

        def load(self) -> None:
            self.nlp = {"en": spacy.blank("en")}  # type: ignore[assignment]

    engine = BlankEnglish()
    engine.load()
    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in (
        OfflineEmail(),
        PhoneRecognizer(supported_regions=("US", "GB", "DE", "FR", "IN", "CA", "AU", "IE", "ES", "IT", "NL")),
        IbanRecognizer(),
        CreditCardRecognizer(),
        IpRecognizer(),
        UsSsnRecognizer(),
    ):
        registry.add_recognizer(recognizer)
    return AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=["en"])


class Detector:
    """Finds identifiers in one string at a time; `min_score` drops Presidio's weakest guesses."""

    def __init__(self, *, min_score: float = 0.35, max_chars: int = 200_000) -> None:
        self.min_score = min_score
        self.max_chars = max_chars

    def find(self, text: str) -> list[Finding]:
        """Non-overlapping findings in ``text``, in order; longer and more specific findings win overlaps."""
        if not text.strip():
            return []
        found: list[Finding] = []
        for offset in range(0, len(text), self.max_chars):
            part = text[offset : offset + self.max_chars]
            found += [Finding(f.kind, f.start + offset, f.end + offset, f.text, f.score, f.source)
                      for f in self._find_part(part)]  # fmt: skip
        return _resolve(found)

    def _find_part(self, text: str) -> list[Finding]:
        out = list(_own_findings(text))
        if any(ch.isdigit() for ch in text) or "@" in text:
            for r in _analyzer().analyze(text=text, language="en"):
                kind = _PRESIDIO_KINDS.get(r.entity_type)
                if kind is None or r.score < self.min_score or kind == "URL":
                    continue
                span = text[r.start : r.end]
                if kind == "PHONE" and (
                    sum(c.isdigit() for c in span) < 7 or is_date_like(span) or _RE_QUAD.fullmatch(span)
                ):
                    continue
                out.append(Finding(kind, r.start, r.end, span, float(r.score), "presidio"))
        return out


def _resolve(found: list[Finding]) -> list[Finding]:
    """Keep a non-overlapping subset: longer spans first, then the more specific kind, then the higher score."""
    ranked = sorted(found, key=lambda f: (-(f.end - f.start), _PRIORITY.get(f.kind, 99), -f.score, f.start))
    taken: list[Finding] = []
    for f in ranked:
        if f.end <= f.start:
            continue
        if all(f.end <= t.start or f.start >= t.end for t in taken):
            taken.append(f)
    return sorted(taken, key=lambda f: f.start)
