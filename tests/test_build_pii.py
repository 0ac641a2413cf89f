"""The build's PII layer, unit by unit: `Pseudonyms` (stable, keyed, injective, format-preserving), `Detector`
(finds identifiers in realistic sentences and leaves evidence such as amounts and dates alone; precision and recall
measured on a small hand-written set) and `Anonymizer` (learned names replaced everywhere, in any case and inside
file names; its edits; its saved state). Checks against plain reference implementations where there is one
(ISO 13616 mod 97, Luhn)."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from hippocamp.build.anonymize import Anonymizer
from hippocamp.build.pii import Detector, Finding
from hippocamp.build.pseudonyms import Pseudonyms, _name_pools
from hippocamp.build.rewrite import check_edits

SECRET = b"k" * 32
OTHER = b"q" * 32


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def _shape(text: str) -> str:
    """Letters as ``a``/``A``, digits as ``9``, everything else as itself."""
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", text)))


# --- reference implementations --------------------------------------------------------------------------


def iban_valid(iban: str) -> bool:
    """ISO 13616: move the first four characters to the end, letters to 10..35, the number mod 97 is 1."""
    compact = iban.replace(" ", "")
    moved = compact[4:] + compact[:4]
    return int("".join(str(ord(c) - 55) if c.isalpha() else c for c in moved)) % 97 == 1


def luhn_valid(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return total % 10 == 0


# --- Pseudonyms -----------------------------------------------------------------------------------------

IBANS = [
    "GB82 WEST 1234 5698 7654 32",
    "GB29NWBK60161331926819",
    "DE89 3704 0044 0532 0130 00",
    "FR14 2004 1010 0505 0001 3M02 606",
    "NL91 ABNA 0417 1643 00",
]
CARDS = ["4111 1111 1111 1111", "6011-0009-9013-9424", "378282246310005", "5555 5555 5555 4444"]


def _values(p: Pseudonyms) -> list[str]:
    return [
        p.name_token("Priya"),
        p.name_token("Raman", "surname"),
        p.phone("+44 20 7946 0958"),
        p.iban(IBANS[0]),
        p.card(CARDS[0]),
        p.identifier("X1234567"),
        p.gps("51.5074, -0.1278"),
        p.ip("192.168.10.24"),
        p.word("Meridia", "org"),
    ]


def test_pseudonyms_are_stable_under_one_secret_and_keyed_by_it() -> None:
    first, again, other = _values(Pseudonyms(SECRET)), _values(Pseudonyms(SECRET)), _values(Pseudonyms(OTHER))
    assert first == again
    # every value changes with the secret except by a chance of about 1 in the pool's size
    assert sum(a != b for a, b in zip(first, other, strict=True)) >= len(first) - 1
    assert all(a != b for a, b in zip(first[2:7], other[2:7], strict=True))  # long values: never the same
    with pytest.raises(ValueError, match="16 bytes"):
        Pseudonyms(b"short")


def test_name_pseudonyms_are_injective_and_stay_so_after_reloading_the_table() -> None:
    female, male, last, _, _ = _name_pools()
    givens, surnames = female[:300] + male[:300], last[:600]
    p = Pseudonyms(SECRET)
    seen: dict[str, str] = {}
    for token in givens:
        seen[token.lower()] = p.name_token(token, "given").lower()
    for token in surnames:
        seen.setdefault(token.lower(), p.name_token(token, "surname").lower())
    assert len(set(seen.values())) == len(seen)  # no two names share a pseudonym, given names and surnames alike
    # a table loaded back (a rerun, a rewrite worker) knows which pseudonyms are taken
    reloaded = Pseudonyms(SECRET, p.table)
    more = [t for t in last[600:900] if t.lower() not in seen]
    new = {reloaded.name_token(t, "surname").lower() for t in more}
    assert len(new) == len(more) and not new & set(seen.values())


def test_word_pseudonyms_stay_injective_past_the_pool() -> None:
    p = Pseudonyms(SECRET)
    originals = [f"Org{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(200)]  # more than the 60-word pool
    out = [p.word(o, "org").lower() for o in originals]
    assert len(set(out)) == len(out)
    assert all(w.isalpha() for w in out)


def test_a_pseudonym_never_lands_on_a_name_to_avoid() -> None:
    female, male, last, _, _ = _name_pools()
    avoid = set(female[::2] + male[::2] + last[::2])  # half of every pool: collisions are forced
    p = Pseudonyms(SECRET, avoid=avoid)
    tokens = [*female[1:400:2], *male[1:400:2]]
    out = [p.name_token(t).lower() for t in tokens] + [p.name_token(t, "surname").lower() for t in last[1:800:2]]
    assert not set(out) & {a.lower() for a in avoid}
    assert all(o != t.lower() for o, t in zip(out, tokens, strict=False))


def test_a_name_keeps_its_case_and_role() -> None:
    p = Pseudonyms(SECRET)
    title = p.name_token("Priya")
    assert p.name_token("PRIYA") == title.upper() and p.name_token("priya") == title.lower()
    assert title[:1].isupper() and title[1:].islower() and title.lower() != "priya"
    _, _, last, _, _ = _name_pools()
    assert p.name_token("Raman", "surname") in last
    whole = p.person("Dr. Mira J. Lindqvist")
    assert whole.startswith("Dr. ") and re.fullmatch(r"Dr\. [A-Z][a-z]+ [A-Z]\. [A-Z][a-z]+", whole), whole
    assert p.person("Lindqvist, Mira") == f"{whole.split()[-1]}, {whole.split()[1]}"


@pytest.mark.parametrize("iban", IBANS)
def test_an_iban_gets_valid_check_digits_its_country_and_its_grouping(iban: str) -> None:
    assert iban_valid(iban)  # the reference check accepts the real-format originals
    new = Pseudonyms(SECRET).iban(iban)
    assert iban_valid(new), new
    assert new[:2] == iban[:2] and new != iban
    assert _shape(new[4:]) == _shape(iban[4:])  # grouping, letters-for-letters, digits-for-digits
    assert Pseudonyms(SECRET).iban(iban.replace(" ", "-")).replace("-", " ") == new  # any separator kept


@pytest.mark.parametrize("card", CARDS)
def test_a_card_passes_luhn_and_keeps_length_grouping_and_first_digit(card: str) -> None:
    assert luhn_valid(card)
    p = Pseudonyms(SECRET)
    new = p.card(card)
    assert luhn_valid(new), new
    assert _shape(new) == _shape(card) and new[0] == card[0] and new != card
    assert p.table["card"][card] == new  # the private table holds what was written


@pytest.mark.parametrize(
    ("phone", "prefix"),
    [
        ("+1 415 555 0142", "+1 "),
        ("+44 20 7946 0958", "+44 "),
        ("+353 87 123 4567", "+353 "),
        ("+49 30 901820", "+49 "),
        ("(212) 555-0187", "("),
        ("415.555.0142", ""),
        ("1-800-555-0199", "1-"),
        ("020 7946 0958", "0"),
    ],
)
def test_a_phone_keeps_punctuation_length_country_code_and_dialable_shape(phone: str, prefix: str) -> None:
    new = Pseudonyms(SECRET).phone(phone)
    assert _shape(new) == _shape(phone) and new != phone
    assert new.startswith(prefix)
    national = re.sub(r"\D", "", new[len(prefix) :] if prefix.startswith(("+", "1")) else new)
    if prefix in ("+1 ", "(", "", "1-"):  # North American: area code and exchange start with 2-9
        assert national[0] in "23456789" and national[3] in "23456789", new
    else:  # the national number starts with 0 where the original did, and only there
        original = re.sub(r"\D", "", phone[len(prefix) :] if prefix.startswith("+") else phone)
        assert (national[0] == "0") == (original[0] == "0"), new


@pytest.mark.parametrize("ident", ["X1234567", "PLX-2298-4417", "ab12-cd34", "00482913"])
def test_an_id_keeps_letters_for_letters_and_digits_for_digits(ident: str) -> None:
    new = Pseudonyms(SECRET).identifier(ident)
    assert _shape(new) == _shape(ident) and new != ident


def test_gps_moves_every_place_by_one_offset_and_keeps_decimals() -> None:
    p = Pseudonyms(SECRET)
    places = ["51.5074, -0.1278", "48.8566,2.3522", "40.712800, -74.006000"]
    moved = [p.gps(x) for x in places]
    offsets = set()
    for old, new in zip(places, moved, strict=True):
        (lat, lon), (nlat, nlon) = [tuple(v.split(",")) for v in (old, new)]
        decimals = [len(v.strip().split(".")[1]) for v in (lat, lon)]
        assert [len(v.strip().split(".")[1]) for v in (nlat, nlon)] == decimals
        assert re.sub(r"[-\d.]", "", new) == re.sub(r"[-\d.]", "", old)  # the separator kept
        dlat, dlon = float(nlat) - float(lat), float(nlon) - float(lon)
        assert abs(dlat) + abs(dlon) > 0 and abs(dlat) <= 0.25 and abs(dlon) <= 0.5
        offsets.add((round(dlat, 3), round(dlon, 3)))
    assert len(offsets) == 1  # the same offset everywhere: the distance between two places is kept
    a, b = ([float(v) for v in x.split(",")] for x in places[:2])
    na, nb = ([float(v) for v in x.split(",")] for x in moved[:2])
    assert abs((b[0] - a[0]) - (nb[0] - na[0])) < 2e-4 and abs((b[1] - a[1]) - (nb[1] - na[1])) < 2e-4


def test_an_ip_keeps_its_first_octet_and_stays_an_address() -> None:
    new = Pseudonyms(SECRET).ip("192.168.10.24")
    parts = new.split(".")
    assert new != "192.168.10.24" and parts[0] == "192" and len(parts) == 4
    assert all(1 <= int(x) <= 254 for x in parts[1:])


# --- Detector ---------------------------------------------------------------------------------------------

FINDS = [
    ('From: "Priya Raman" <priya.raman@gmail.com>', "PERSON", "Priya Raman"),
    ('From: "Priya Raman" <priya.raman@gmail.com>', "EMAIL", "priya.raman@gmail.com"),
    ("To: Tomas Novak <tn@novak-design.cz>", "PERSON", "Tomas Novak"),
    ("Thanks for everything.\n\nKind regards,\nJonathan Whitfield\nSenior Analyst", "PERSON", "Jonathan Whitfield"),
    ("Hi Tomasz,\n\nsee attached.\n\nBest,\nElena", "PERSON", "Elena"),
    ("Dr. Okafor will see you at 10:15.", "PERSON", "Okafor"),
    ("Lindqvist, Mira - Head of Design", "PERSON", "Lindqvist, Mira"),
    ("Meeting with Sarah Connolly and Ahmed Farouk on Tuesday.", "PERSON", "Ahmed Farouk"),
    ("Please send it to 42 Larchmont Street, Apt 5B, Springfield, IL 62704.", "ADDRESS",
     "42 Larchmont Street, Apt 5B, Springfield, IL 62704"),
    ("Our office: 7 Quayside Terrace, Leeds LS1 4AP", "ADDRESS", "7 Quayside Terrace, Leeds LS1 4AP"),
    ("IBAN: DE89 3704 0044 0532 0130 00", "IBAN", "DE89 3704 0044 0532 0130 00"),
    ("Rent goes to GB82 WEST 1234 5698 7654 32 monthly", "IBAN", "GB82 WEST 1234 5698 7654 32"),
    ("Passport no: X1234567, expires 2031.", "ID", "X1234567"),
    ("Policy number: PLX-2298-4417", "ID", "PLX-2298-4417"),
    ("Follow @mira_lindqvist for updates", "HANDLE", "@mira_lindqvist"),
    ("We parked at 51.5074, -0.1278 near the bridge.", "GPS", "51.5074, -0.1278"),
    ("My profile: https://www.linkedin.com/in/tobias-ferreira-8a21", "URL", "tobias-ferreira-8a21"),
    ("Call me on +1 415 555 0142 after six.", "PHONE", "+1 415 555 0142"),
    ("Server at 192.168.10.24 is down", "IP", "192.168.10.24"),
    ("Paid with 4111 1111 1111 1111 yesterday.", "CARD", "4111 1111 1111 1111"),
    ("His SSN is 536-22-1494.", "SSN", "536-22-1494"),
    ("Prescription from Meadowbank Medical Centre.", "ORG", "Meadowbank Medical Centre"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "kind", "expected"), FINDS)
def test_the_detector_finds_each_kind(detector: Detector, text: str, kind: str, expected: str) -> None:
    found = detector.find(text)
    assert any(f.kind == kind and f.text == expected for f in found), [(f.kind, f.text) for f in found]
    for f in found:
        assert text[f.start : f.end] == f.text  # spans are exact, with no whitespace around them


EVIDENCE = [
    "The invoice total came to EUR 1,450.00, payable within 30 days.",
    "We paid $3,200 for the deposit on 2024-06-01.",
    "The meeting moved to 1 May 2024 at 09:30.",
    "Our flight departs at 07:45 and lands at 11:20 local time.",
    "Order total: 3 items, 149.97 USD, shipped 2024-05-28.",
    "Please upgrade to v2.1 before Friday; v2.0 is deprecated.",
    "Revenue grew 12.5% year over year.",
    "Ref: 2024-06-01 noted.",
    "Statement 03.06.2024: closing balance 11,902.10.",
    "Tax year 2023-2024 return filed.",
    "Booking 20240601 confirmed.",
    "May I suggest we postpone the review until June?",
    "Will this be ready by Thursday afternoon?",
    "The grace period ends after 14 days.",
    "Budget Plan Q3: marketing 40%, engineering 35%.",
    "Monday Morning Standup notes are in the shared folder.",
    "Thanks, all. Regards to the team.",
    "Rates today 1.0834, 1.2712, 0.8571 and 1.1020.",
    "Lindqvist, Mira - Head of Design",
]


@pytest.mark.parametrize("text", EVIDENCE)
def test_the_detector_leaves_amounts_dates_and_ordinary_words_alone(detector: Detector, text: str) -> None:
    found = [f for f in detector.find(text) if f.kind != "PERSON" or "Mira" not in f.text]
    assert not found, [(f.kind, f.text, f.source) for f in found]


# A small hand-written set, to measure (not to tune on): sentences without personal identifiers, and sentences
# with them, each identifier annotated as (kind, text). Misses of names with no context and of given names
# Faker does not list (Rahul, Wei, Hiroshi) are expected.
CLEAN = [
    "The invoice total came to EUR 1,450.00, payable within 30 days.",
    "We paid $3,200 for the deposit on 2024-06-01.",
    "The meeting moved to 1 May 2024 at 09:30.",
    "Revenue grew 12.5% year over year, to £48.2m.",
    "Please upgrade to v2.1 before Friday; v2.0 is deprecated.",
    "Order #448812 shipped on 14/03/2024 and should arrive by 18/03.",
    "May I suggest we postpone the review until June?",
    "Will this be ready by Thursday afternoon?",
    "The grace period ends after 14 days.",
    "Budget Plan Q3: marketing 40%, engineering 35%, other 25%.",
    "Monday Morning Standup notes are in the shared folder.",
    "Our flight departs at 07:45 and lands at 11:20 local time.",
    "The train costs 23.50 GBP return, or 14.20 single.",
    "Room temperature was 21.5 °C and humidity 48%.",
    "I ran 10.2 km in 52:13 this morning, average pace 5:07/km.",
    "Subtotal 1,299.99; tax 260.00; total 1,559.99.",
    "Build 2024.06.11 fixed the crash reported in issue 3412.",
    "Python 3.11.4 and numpy 1.26.0 are required.",
    "Chapter 7 covers pages 112-148.",
    "Meet at Central Station under the big clock.",
    "Happy New Year! Let's make 2025 a great one.",
    "The recipe needs 250 g flour, 2 eggs and 100 ml milk.",
    "Quarterly Results Summary - Q2 2024",
    "Rent increased from 1,150 to 1,240 per month starting 1 September.",
    "Total due: 89.90 EUR (incl. 19% VAT).",
    "Doors open at 7pm; the show starts at 8:15pm.",
    "Patch Tuesday updates were applied to all 42 laptops.",
    "The 2023 tax return was filed on 15 April 2024.",
    "Interest rate fixed at 3.85% for 5 years.",
    "Weekly Grocery List: apples, oats, coffee beans.",
    "Project Phoenix kickoff is scheduled for 2024-07-15 10:00-11:30.",
    "The map scale is 1:25000 and the trail climbs 640 m.",
    "The package weighs 2.35 kg and measures 40 x 30 x 15 cm.",
    "Exchange rate today: 1 EUR = 1.0834 USD.",
    "Final score 3-1 after extra time; 87,000 fans attended.",
    "Grace under pressure is what the coach asked for.",
    "Mark the calendar: the audit starts 3 March.",
    "Total Hours Worked: 37.5 (overtime 2.5)",
    "Summer Reading List 2024",
    "Rose prices went up 15% before Valentine's Day.",
    "Bill me later; the amount is 1,020.75 USD.",
    "Population reached 8,336,817 in the 2020 census.",
    "Balance brought forward 12,480.33, closing balance 11,902.10.",
    "Ref 2024/06/118 - paid in full on 03.06.2024.",
    "Joy and Hope were the words on the banner.",
    "Reading time: 4 min. Updated 11 Jun 2024, 18:02 UTC.",
    "Invoice INV-2024-0042 total 1,250.00 EUR, due 30 June 2024.",
    "Annual Leave Request for 12-16 August.",
    "Steps today 12,408; resting heart rate 58 bpm.",
]
WITH_PII: list[tuple[str, list[tuple[str, str]]]] = [
    ('From: "Priya Raman" <priya.raman@gmail.com>', [("PERSON", "Priya Raman"), ("EMAIL", "priya.raman@gmail.com")]),
    ("Hi Tomasz,\n\nsee attached.\n\nBest,\nElena", [("PERSON", "Tomasz"), ("PERSON", "Elena")]),
    ("Dr. Okafor will see you at 10:15.", [("PERSON", "Okafor")]),
    ("Lindqvist, Mira - Head of Design", [("PERSON", "Lindqvist, Mira")]),
    ("Please send it to 42 Larchmont Street, Apt 5B, Springfield, IL 62704.",
     [("ADDRESS", "42 Larchmont Street, Apt 5B, Springfield, IL 62704")]),
    ("Our office: 7 Quayside Terrace, Leeds LS1 4AP", [("ADDRESS", "7 Quayside Terrace, Leeds LS1 4AP")]),
    ("IBAN: DE89 3704 0044 0532 0130 00", [("IBAN", "DE89 3704 0044 0532 0130 00")]),
    ("Passport no: X1234567, expires 2031.", [("ID", "X1234567")]),
    ("Follow me @mira_lindqvist for updates", [("HANDLE", "@mira_lindqvist")]),
    ("We parked at 51.5074, -0.1278 near the bridge.", [("GPS", "51.5074, -0.1278")]),
    ("My profile: https://www.linkedin.com/in/tobias-ferreira-8a21", [("URL", "tobias-ferreira-8a21")]),
    ("Call me on +1 415 555 0142 after six.", [("PHONE", "+1 415 555 0142")]),
    ("Mobile: 07700 900123", [("PHONE", "07700 900123")]),
    ("Paid with 4111 1111 1111 1111 yesterday.", [("CARD", "4111 1111 1111 1111")]),
    ("His SSN is 536-22-1494.", [("SSN", "536-22-1494")]),
    ("Server IP 192.168.10.24 is down", [("IP", "192.168.10.24")]),
    ("Kind regards,\nJonathan Whitfield\nSenior Analyst", [("PERSON", "Jonathan Whitfield")]),
    ("Mrs. Adeyemi called about the boiler.", [("PERSON", "Adeyemi")]),
    ("Meeting with Sarah Connolly and Ahmed Farouk on Tuesday.",
     [("PERSON", "Sarah Connolly"), ("PERSON", "Ahmed Farouk")]),
    ("Dear Grace Okafor,", [("PERSON", "Grace Okafor")]),
    ("Prescription from Meadowbank Medical Centre.", [("ORG", "Meadowbank Medical Centre")]),
    ("Transfer to NL91 ABNA 0417 1643 00 done.", [("IBAN", "NL91 ABNA 0417 1643 00")]),
    ("Pay FR14 2004 1010 0505 0001 3M02 606 by Friday.", [("IBAN", "FR14 2004 1010 0505 0001 3M02 606")]),
    ("Policy number: PLX-2298-4417", [("ID", "PLX-2298-4417")]),
    ("Employee ID 00482913", [("ID", "00482913")]),
    ("Email me at k.mensah@ferreira-law.pt", [("EMAIL", "k.mensah@ferreira-law.pt")]),
    ("Patient: Hannah Schmidt, DOB 1984-02-11", [("PERSON", "Hannah Schmidt")]),
    ("Booked by Rahul Mehta for 2 guests", [("PERSON", "Rahul Mehta")]),
    ("Signed, Prof. Elena Marchetti", [("PERSON", "Elena Marchetti")]),
    ("Ring Carlos Ortega on (212) 555-0187", [("PERSON", "Carlos Ortega"), ("PHONE", "(212) 555-0187")]),
    ("Tel. +49 30 901820", [("PHONE", "+49 30 901820")]),
    ("Invoice to: Northwind Consulting Ltd, 18 Harbour Road, Bristol BS1 5TT",
     [("ORG", "Northwind Consulting Ltd"), ("ADDRESS", "18 Harbour Road, Bristol BS1 5TT")]),
    ("Loyalty card 6011 0009 9013 9424", [("CARD", "6011 0009 9013 9424")]),
    ("Tweet from @dana_k: great talk", [("HANDLE", "@dana_k")]),
    ("Photo taken at 40.7128, -74.0060", [("GPS", "40.7128, -74.0060")]),
    ("Message from Olivia: running late", [("PERSON", "Olivia")]),
    ("Wei Zhang presented the results.", [("PERSON", "Wei Zhang")]),
    ("Contact: siobhan.oconnor@outlook.com, +353 87 123 4567",
     [("EMAIL", "siobhan.oconnor@outlook.com"), ("PHONE", "+353 87 123 4567")]),
    ("Code at github.com/priyaraman", [("URL", "priyaraman")]),
    ("Reservation under Ms. Kowalski, confirmation ABX93K2", [("PERSON", "Kowalski"), ("ID", "ABX93K2")]),
    ("Flat 3, 12 Baker Street, London NW1 6XE", [("ADDRESS", "12 Baker Street, London NW1 6XE")]),
    ("cc: Fatima Al-Sayed <fatima@alsayed.org>", [("PERSON", "Fatima Al-Sayed"), ("EMAIL", "fatima@alsayed.org")]),
    ("On Tue, 11 Jun 2024, Kofi Mensah <kofi.mensah@gmail.com> wrote:",
     [("PERSON", "Kofi Mensah"), ("EMAIL", "kofi.mensah@gmail.com")]),
    ("Emergency contact: Ana Lucia Torres, 0161 496 0000",
     [("PERSON", "Ana Lucia Torres"), ("PHONE", "0161 496 0000")]),
    ("Deliver to 1600 Pennsylvania Avenue NW, Washington, DC 20500",
     [("ADDRESS", "1600 Pennsylvania Avenue NW, Washington, DC 20500")]),
    ("Sort code 20-00-00, account number 55779911", [("ID", "20-00-00"), ("ID", "55779911")]),
    ("Your NHS number is 485 777 3456", [("ID", "485 777 3456")]),
    ("Ask Hiroshi Tanaka about the keys", [("PERSON", "Hiroshi Tanaka")]),
    ("Appointment with Dr Nadia Petrova on Friday", [("PERSON", "Nadia Petrova")]),
    ("VAT reg GB123456789", [("ID", "GB123456789")]),
]  # fmt: skip


def _overlaps(f: Finding, text: str, expected: str) -> bool:
    start = text.find(expected)
    return start >= 0 and f.start < start + len(expected) and start < f.end


def measure(detector: Detector) -> dict[str, float]:
    """Precision (findings that cover an annotated identifier), recall (annotated identifiers covered by a
    finding of any kind) and strict recall (found with their kind and exact span), over CLEAN and WITH_PII."""
    true = false = 0
    covered = strict = total = 0
    wrong: list[tuple[str, str, str]] = []
    for text in CLEAN:
        for f in detector.find(text):
            false += 1
            wrong.append(("false", f.kind, f.text))
    for text, expected in WITH_PII:
        found = detector.find(text)
        for f in found:
            if any(_overlaps(f, text, e) for _, e in expected):
                true += 1
            else:
                false += 1
                wrong.append(("false", f.kind, f.text))
        for kind, e in expected:
            total += 1
            covered += any(_overlaps(f, text, e) for f in found)
            strict += any(f.kind == kind and f.text == e for f in found)
            if not any(_overlaps(f, text, e) for f in found):
                wrong.append(("missed", kind, e))
    scores = {"precision": true / (true + false), "recall": covered / total, "strict_recall": strict / total,
              "findings": true + false, "identifiers": total}  # fmt: skip
    print(f"\ndetector on {len(CLEAN)} clean + {len(WITH_PII)} annotated sentences: {scores}")
    for row in wrong:
        print("  ", *row)
    return scores


def test_detector_precision_and_recall_on_a_hand_written_set(detector: Detector) -> None:
    assert len(CLEAN) >= 40 and len(WITH_PII) >= 40
    scores = measure(detector)
    assert scores["precision"] >= 0.9
    assert scores["recall"] >= 0.85
    assert scores["strict_recall"] >= 0.75


# --- Anonymizer ---------------------------------------------------------------------------------------------


def _anonymizer(*texts: str) -> Anonymizer:
    a = Anonymizer(Pseudonyms(SECRET))
    for text in texts:
        a.learn(text)
    a.freeze()
    return a


HEADER = 'From: "Priya Raman" <priya.raman@gmail.com>\nTo: "Grace Okafor" <g.okafor@okafor-law.ng>'


def test_a_name_learned_in_a_header_is_replaced_alone_in_files_names_and_camel_case() -> None:
    a = _anonymizer(HEADER)
    priya, raman = a.pseudonyms.name_token("Priya"), a.pseudonyms.name_token("Raman", "surname")
    assert a.apply("Call Priya about the flat.") == f"Call {priya} about the flat."
    assert a.apply("RAMAN household") == f"{raman.upper()} household"
    assert a.rename("Documents/CV/priya_raman_cv.pdf") == f"Documents/CV/{priya.lower()}_{raman.lower()}_cv.pdf"
    assert a.rename("Notes/Priya Raman notes.md") == f"Notes/{priya} {raman} notes.md"
    assert a.rename("Documents/Priya_Raman CV.pdf") == f"Documents/{priya}_{raman} CV.pdf"
    assert a.apply("PriyaRaman") == f"{priya}{raman}"
    assert a.apply("priyaRaman.docx") == f"{priya.lower()}{raman}.docx"
    # the header itself: names in the display name and in the address's local part alike
    out = a.apply(HEADER)
    assert "priya" not in out.lower() and "raman" not in out.lower() and "okafor" not in out.lower()


def test_an_ambiguous_word_that_is_a_learned_name_stays_a_word_in_lower_case() -> None:
    a = _anonymizer(HEADER, "Said Benali <said@benali.ma>")
    assert {"grace", "said"} <= set(a.name_tokens)
    assert a.apply("the grace period ends") == "the grace period ends"
    assert a.apply("she said my card is with us") == "she said my card is with us"
    grace = a.pseudonyms.name_token("Grace")
    assert a.apply("Grace Okafor called") == f"{grace} {a.pseudonyms.name_token('Okafor', 'surname')} called"


def test_greetings_and_job_titles_are_never_learned_as_names() -> None:
    signed = "Regards,\nJonathan Whitfield\nSenior Analyst"
    a = _anonymizer("Thanks, Elena", "Hi Tomasz,\n\nok\n\nBest,\nElena\n", signed)
    assert {"elena", "tomasz", "jonathan", "whitfield"} <= set(a.name_tokens)
    assert not {"thanks", "best", "regards", "senior", "analyst"} & set(a.name_tokens)
    assert a.apply("Thanks, all. Best wishes.") == "Thanks, all. Best wishes."
    assert a.apply("ok\nElena\nps").count("\n") == 2  # a sign-off keeps its line breaks


def test_a_literal_identifier_found_once_is_replaced_where_it_recurs_without_its_label() -> None:
    a = _anonymizer("Passport no: X1234567", "IBAN GB82 WEST 1234 5698 7654 32")
    new = a.pseudonyms.identifier("X1234567")
    assert a.apply("scan of X1234567 attached") == f"scan of {new} attached"
    assert a.apply("file X1234567.pdf") == f"file {new}.pdf"
    assert a.apply("AX12345678") == "AX12345678"  # not inside a longer token
    assert "WEST 1234" not in a.apply("paid GB82 WEST 1234 5698 7654 32")


def test_originals_hold_the_originals_and_never_a_pseudonym() -> None:
    a = _anonymizer(HEADER, "Passport no: X1234567", "Call +1 415 555 0142")
    for text in (HEADER, "X1234567 again", "+1 415 555 0142"):
        a.apply(text)
    originals = set(a.originals())
    assert {"priya", "raman", "okafor", "priya.raman@gmail.com", "x1234567", "+1 415 555 0142"} <= originals
    assert "grace" not in originals  # an ordinary word: a residual check would flag every "grace period"
    pseudonyms = {v.lower() for kind in a.pseudonyms.table.values() for v in kind.values()}
    assert not originals & pseudonyms


TEXTS = [
    HEADER,
    "Hi Priya,\n\nthe deposit of EUR 1,450.00 is due 2024-06-01 at 09:30. Call +1 415 555 0142.\n\nBest,\nGrace",
    "Passport no: X1234567; IBAN DE89 3704 0044 0532 0130 00; card 4111 1111 1111 1111; at 51.5074, -0.1278",
    "Lives at 42 Larchmont Street, Apt 5B, Springfield, IL 62704; Dr. Okafor's office at Meadowbank Medical Centre",
    "priya_raman_cv PriyaRaman @priya_raman linkedin.com/in/priya-raman",
]


@pytest.mark.parametrize("text", TEXTS)
def test_edits_are_sorted_non_overlapping_and_equal_apply(text: str) -> None:
    a = _anonymizer(*TEXTS)
    edits = a.edits(text)
    check_edits(text, edits)
    out, last = [], 0
    for e in edits:
        out += [text[last : e.start], e.new]
        last = e.end
    assert "".join(out) + text[last:] == a.apply(text) != text


def test_amounts_dates_and_times_survive_anonymization() -> None:
    a = _anonymizer(*TEXTS)
    out = a.apply(TEXTS[1])
    for evidence in ("EUR 1,450.00", "2024-06-01", "09:30"):
        assert evidence in out
    assert "Priya" not in out and "555 0142" not in out
    for text in EVIDENCE[:13]:
        assert a.apply(text) == text
    # file names made of dates and counters are kept, separators and all
    for path in (
        "Pictures/IMG_20240614_193000.jpg",
        "Scans/Scan 2024-06-01 10.32.11.pdf",
        "Finance/Bank statement 03.06.2024.pdf",
        "Finance/Tax 2023-2024.xlsx",
        "Pictures/IMG_2024 copy.jpg",
    ):
        assert a.rename(path) == path


def test_an_address_keeps_its_shape_and_its_street_pseudonym_with_or_without_a_unit() -> None:
    a = _anonymizer(*TEXTS)
    full = a.apply("42 Larchmont Street, Apt 5B, Springfield, IL 62704")
    short = a.apply("42 Larchmont Street Apt 5B")
    assert re.fullmatch(r"\d\d [A-Z][a-z]+ Street, Apt \dB, Springfield, IL \d{5}", full), full
    assert full.split(",")[0] == short.removesuffix(short[short.index(" Apt") :]) and " Street Apt " in short
    assert "Larchmont" not in full and "62704" not in full


def test_the_saved_state_gives_the_same_output_after_loading(tmp_path: Path) -> None:
    a = _anonymizer(*TEXTS)
    path = tmp_path / "anonymizer.json"
    a.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    b = Anonymizer.load(path)
    assert b.name_tokens == a.name_tokens
    later = [*TEXTS, "New person: Dr. Adeyemi, +44 20 7946 0958, Samira Haddad <samira@haddad.dev>", "Priya again"]
    assert [b.apply(t) for t in later] == [a.apply(t) for t in later]
    assert [b.rename(p) for p in ("Mail/priya_raman.eml", "X1234567.pdf")] == [
        a.rename(p) for p in ("Mail/priya_raman.eml", "X1234567.pdf")
    ]
