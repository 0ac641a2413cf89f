"""Text readers end to end through `perceive_file`: chunks and line locators, encodings, JSON
records, HTML visible text, RTF, and the bad inputs (binary text files, invalid JSON)."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from hippocamp.perceive import FileResult, perceive_file, reader_for
from hippocamp.perceive.text import MAX_CHARS, chunk_lines, decode_text, rtf_to_text
from hippocamp.schema.locators import ItemLocator, LineLocator, parse_locator


def read(root: Path, rel: str, data: bytes | str) -> FileResult:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", newline="")
    else:
        path.write_bytes(data)
    return perceive_file(root, rel)


def positions(result: FileResult) -> list[object]:
    return [seg.locator.dump() if seg.locator else None for seg in result.segments]


def test_text_family_extensions_have_readers() -> None:
    for ext, name in [
        ("txt", "text"),
        ("MD", "text"),
        ("log", "text"),
        ("yaml", "text"),
        ("xml", "text"),
        ("jsonl", "text"),
        ("json", "json"),
        ("html", "html"),
        ("htm", "html"),
        ("rtf", "rtf"),
    ]:
        reader = reader_for(ext)
        assert reader is not None and reader.name == name, ext


def test_paragraphs_are_packed_into_chunks_of_at_most_1000_chars(tmp_path: Path) -> None:
    para = "word " * 79 + "end"  # 398 characters
    text = f"Title line\n\n{para}\n{para}\n\n\n{para}\n\nLast paragraph.\n"
    result = read(tmp_path, "notes.txt", text)
    assert result.status == "ok" and result.reader == "text"
    assert positions(result) == [
        {"unit": "lines", "position": {"line": 1, "line_end": 4}},
        {"unit": "lines", "position": {"line": 7, "line_end": 9}},
    ]
    first, second = result.segments
    assert first.text == f"Title line\n\n{para}\n{para}"
    assert second.text == f"{para}\n\nLast paragraph."  # a run of blank lines becomes one
    assert all(len(s.text) <= MAX_CHARS for s in result.segments)
    assert [s.ordinal for s in result.segments] == [0, 1]
    assert first.modality == "text" and first.meta == {} and first.path == "notes.txt"
    assert isinstance(parse_locator(first.locator.dump()), LineLocator)


def test_a_single_line_is_located_without_line_end(tmp_path: Path) -> None:
    result = read(tmp_path, "one.txt", "\n\n  just this  \n\n")
    assert positions(result) == [{"unit": "lines", "position": {"line": 3}}]
    assert result.segments[0].text == "  just this"


def test_a_long_line_is_cut_and_every_piece_keeps_its_line(tmp_path: Path) -> None:
    line = " ".join(f"w{i:04d}" for i in range(500))  # 2999 characters
    result = read(tmp_path, "long.log", f"head\n\n{line}\ntail\n")
    texts = [s.text for s in result.segments]
    assert texts[0] == "head"
    assert all(len(t) <= MAX_CHARS for t in texts)
    assert " ".join(texts[1:]).replace("\ntail", " tail") == f"{line} tail"
    assert positions(result)[1:-1] == [{"unit": "lines", "position": {"line": 3}}] * (len(texts) - 2)
    assert positions(result)[-1] == {"unit": "lines", "position": {"line": 3, "line_end": 4}}


def test_line_numbers_count_crlf_and_lone_cr(tmp_path: Path) -> None:
    result = read(tmp_path, "mixed.txt", b"one\r\ntwo\r\n\r\nthree\rfour\n\nfive")
    assert [s.text for s in result.segments] == ["one\ntwo\n\nthree\nfour\n\nfive"]
    assert positions(result) == [{"unit": "lines", "position": {"line": 1, "line_end": 7}}]
    exact = chunk_lines(["a", "", "b" * 995, "c"], limit=1000)  # "a\n\n" + 995 + "\nc": 1000 characters
    assert [(c.first, c.last, len(c.text)) for c in exact] == [(1, 4, 1000)]
    over = chunk_lines(["a", "", "b" * 996, "c"], limit=1000)
    assert [(c.first, c.last) for c in over] == [(1, 1), (3, 4)]


def test_markdown_sections_start_at_headings(tmp_path: Path) -> None:
    text = "# To do\n- dentist 15 October 2024, 9:00\n- call Amara\n\n## Later\nBuy paint.\n\nNo heading text\n"
    result = read(tmp_path, "Notes/todo.md", text)
    assert [s.text for s in result.segments] == [
        "# To do\n- dentist 15 October 2024, 9:00\n- call Amara",
        "## Later\nBuy paint.\n\nNo heading text",
    ]
    assert positions(result) == [
        {"unit": "lines", "position": {"line": 1, "line_end": 3}},
        {"unit": "lines", "position": {"line": 5, "line_end": 8}},
    ]
    assert [s.meta for s in result.segments] == [{"heading": "To do"}, {"heading": "Later"}]


def test_cp1252_text_is_detected_and_recorded(tmp_path: Path) -> None:
    text = "Café crème brûlée — 5 € for Zoë.\nNaïve façade, déjà vu.\n"
    result = read(tmp_path, "menu.txt", text.encode("cp1252"))
    assert result.status == "ok"
    assert result.segments[0].text == text.strip()
    assert result.segments[0].meta == {"encoding": "cp1252"}
    # short Western texts are read as cp1252 rather than a code page that merely decodes them
    short = read(tmp_path, "price.txt", "Prix: 12 €\nDía de la Madre: año\n".encode("cp1252"))
    assert short.segments[0].text == "Prix: 12 €\nDía de la Madre: año"
    assert short.segments[0].meta == {"encoding": "cp1252"}


def test_other_code_pages_are_detected(tmp_path: Path) -> None:
    text = "Привет, как дела? Всё хорошо, спасибо. Встретимся завтра в библиотеке.\n"
    result = read(tmp_path, "ru.txt", text.encode("cp1251"))
    assert result.segments[0].text == text.strip()
    assert result.segments[0].meta == {"encoding": "cp1251"}


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        ("Grüße\nzweite Zeile\n".encode("utf-16"), "utf-16-le"),  # BOM, little-endian
        (codecs.BOM_UTF16_BE + "Grüße\nzweite Zeile\n".encode("utf-16-be"), "utf-16-be"),
        ("Grüße\nzweite Zeile\n".encode("utf-16-le"), "utf-16-le"),  # no BOM
        ("Grüße\nzweite Zeile\n".encode("utf-32"), "utf-32-le"),
    ],
)
def test_utf16_and_utf32(tmp_path: Path, data: bytes, encoding: str) -> None:
    result = read(tmp_path, "de.txt", data)
    assert result.status == "ok"
    assert result.segments[0].text == "Grüße\nzweite Zeile"
    assert result.segments[0].meta == {"encoding": encoding}
    assert positions(result) == [{"unit": "lines", "position": {"line": 1, "line_end": 2}}]


def test_utf8_with_a_damaged_byte_stays_utf8(tmp_path: Path) -> None:
    data = ("Grüße aus Malmö, Zoë und René. " * 3).encode() + b"\xc3"  # cut inside the last character
    result = read(tmp_path, "cut.txt", data)
    assert result.status == "partial" and result.notes == ["invalid utf-8 bytes replaced"]
    assert result.segments[0].text == "Grüße aus Malmö, Zoë und René. " * 3 + "\ufffd"
    assert result.segments[0].meta == {}


def test_utf8_bom_is_utf8(tmp_path: Path) -> None:
    result = read(tmp_path, "bom.txt", codecs.BOM_UTF8 + "naïve\n".encode())
    assert result.segments[0].text == "naïve" and result.segments[0].meta == {}


def test_undetectable_encoding_falls_back_to_latin1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hippocamp.perceive.decode as decode_mod

    monkeypatch.setattr(decode_mod, "_detect", lambda data: (None, None))
    result = read(tmp_path, "odd.txt", b"abc \x81\x8d def\n")
    assert result.status == "partial"
    assert result.notes == ["encoding not recognised: read as latin-1"]
    assert result.segments[0].meta == {"encoding": "latin-1"}
    assert result.segments[0].text == "abc \x81\x8d def"


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 4,
        bytes([1, 2, 3, 4, 5, 6, 14, 15, 16, 17, 18, 65, 66]) * 100,  # control bytes, no NUL
        b"text then NUL\x00padding" * 3,
    ],
)
def test_binary_content_in_a_text_file_fails(tmp_path: Path, data: bytes) -> None:
    result = read(tmp_path, "fake.txt", data)
    assert result.status == "failed"
    assert result.reason == "binary content in a text file"
    assert result.segments == []


def test_decode_text_keeps_escape_sequences_and_drops_stray_controls() -> None:
    decoded = decode_text(b"2024-10-12 09:00 \x1b[31mERROR\x1b[0m disk full\x07 (bell)\n")
    assert decoded.text == "2024-10-12 09:00 \x1b[31mERROR\x1b[0m disk full (bell)\n"
    assert decoded.note == "control characters removed"


def test_non_ascii_file_names_with_spaces_and_symbols(tmp_path: Path) -> None:
    rel = "Notizen & Ideen/Zoë (alt) – Liste #2.txt"
    result = read(tmp_path, rel, "Einkaufen: Äpfel\n")
    assert result.status == "ok"
    assert result.segments[0].path == rel
    assert result.segments[0].where() == f"{rel} › lines line=1"


def test_yaml_and_xml_are_read_as_lines(tmp_path: Path) -> None:
    result = read(tmp_path, "conf.yaml", "name: Amara\ncity: Oslo\n\nitems:\n  - a\n")
    assert positions(result) == [{"unit": "lines", "position": {"line": 1, "line_end": 5}}]
    xml = read(tmp_path, "data.xml", '<?xml version="1.0"?>\n<a>\n  <b>Zoë</b>\n</a>\n')
    assert xml.segments[0].text == '<?xml version="1.0"?>\n<a>\n  <b>Zoë</b>\n</a>'


# -- JSON ------------------------------------------------------------------------------------------
def test_json_array_of_records_gives_one_segment_per_record(tmp_path: Path) -> None:
    data = [
        {"id": "c-1", "name": "Amara Okafor", "city": "Lagos"},
        {"name": "Oskar Lindqvist", "phone": "+46 70 123"},
        [1, 2, 3],
    ]
    text = json.dumps(data, indent=2, ensure_ascii=False)
    result = read(tmp_path, "contacts.json", text)
    assert result.status == "ok" and result.reader == "json"
    assert positions(result) == [
        {"unit": "record", "position": {"id": "c-1", "index": 1}},
        {"unit": "record", "position": {"index": 2}},
        {"unit": "record", "position": {"index": 3}},
    ]
    assert [json.loads(s.text) for s in result.segments] == data
    assert [(s.meta["line"], s.meta["line_end"]) for s in result.segments] == [(2, 6), (7, 10), (11, 15)]
    assert isinstance(parse_locator(result.segments[0].locator.dump()), ItemLocator)


def test_json_object_scalars_and_big_records_are_read_as_lines(tmp_path: Path) -> None:
    obj = read(tmp_path, "settings.json", '{\n  "theme": "dark",\n  "font": 12\n}\n')
    assert positions(obj) == [{"unit": "lines", "position": {"line": 1, "line_end": 4}}]
    scalars = read(tmp_path, "numbers.json", "[1, 2, 3]")
    assert positions(scalars) == [{"unit": "lines", "position": {"line": 1}}]
    big = read(tmp_path, "big.json", json.dumps([{"text": "x" * 3000}]))
    assert all(s.locator.unit == "lines" for s in big.segments) and len(big.segments) == 4


def test_invalid_json_is_read_as_text_with_a_note(tmp_path: Path) -> None:
    result = read(tmp_path, "broken.json", '[{"a": 1},\n {"b": \n')
    assert result.status == "partial"
    assert result.notes[0].startswith("not valid JSON (") and result.notes[0].endswith("): read as plain text")
    assert positions(result) == [{"unit": "lines", "position": {"line": 1, "line_end": 2}}]


def test_json_lines_are_line_chunks(tmp_path: Path) -> None:
    rows = "\n".join(json.dumps({"n": i}) for i in range(3)) + "\n"
    result = read(tmp_path, "events.jsonl", rows)
    assert result.reader == "text"
    assert positions(result) == [{"unit": "lines", "position": {"line": 1, "line_end": 3}}]


def test_json_in_cp1252(tmp_path: Path) -> None:
    result = read(tmp_path, "old.json", '[{"name": "Zoë Müller", "note": "café"}]'.encode("cp1252"))
    assert result.segments[0].text == '{"name": "Zoë Müller", "note": "café"}'
    assert result.segments[0].meta == {"encoding": "cp1252", "line": 1, "line_end": 1}


# -- HTML ------------------------------------------------------------------------------------------
HTML = """<!doctype html>
<html><head><title>Trip  to Oslo</title>
<style>body { color: red }</style>
<script>var hidden = "<p>not text</p>";</script>
</head>
<body>
<nav><a href="/">Home</a></nav>
<h1>Day 1 &amp; 2</h1>
<p>Train at
9:40 from Central.</p>
<noscript>Enable JS</noscript>
<table><tr><th>Item</th><th>Cost</th></tr>
<tr><td>Hotel</td><td>900&nbsp;NOK</td></tr></table>
<h2>Day 3</h2>
<p>Museum <img src="x.png" alt="ticket scan"> visit.</p>
</body></html>
"""


def test_html_keeps_visible_text_located_by_source_lines(tmp_path: Path) -> None:
    result = read(tmp_path, "Trips/oslo.html", HTML)
    assert result.status == "ok" and result.reader == "html"
    assert [s.text for s in result.segments] == [
        "Home",
        "Day 1 & 2\nTrain at 9:40 from Central.\nItem | Cost\nHotel | 900\u00a0NOK",
        "Day 3\nMuseum [ticket scan] visit.",
    ]
    assert positions(result) == [
        {"unit": "lines", "position": {"line": 7}},
        {"unit": "lines", "position": {"line": 8, "line_end": 13}},
        {"unit": "lines", "position": {"line": 14, "line_end": 15}},
    ]
    assert [s.meta for s in result.segments] == [
        {"title": "Trip to Oslo"},
        {"title": "Trip to Oslo", "heading": "Day 1 & 2"},
        {"title": "Trip to Oslo", "heading": "Day 3"},
    ]
    assert "not text" not in " ".join(s.text for s in result.segments)
    assert "color" not in " ".join(s.text for s in result.segments)


def test_html_declared_charset(tmp_path: Path) -> None:
    page = '<html><head><meta charset="windows-1252"></head><body><p>Ça coûte 5 €</p></body></html>'
    result = read(tmp_path, "old.htm", page.encode("cp1252"))
    assert result.segments[0].text == "Ça coûte 5 €"
    assert result.segments[0].meta == {"encoding": "cp1252"}


# -- RTF -------------------------------------------------------------------------------------------
RTF = (
    r"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0\fswiss Arial;}{\f1 Times;}}"
    r"{\colortbl;\red0\green0\blue0;}{\*\generator Riched20 10.0;}{\info{\title Secret}{\author Me}}"
    "\n"
    r"\viewkind4\uc1\pard\f0\fs24 Dear {\b Oskar},\par"
    "\n"
    r"\par"
    "\n"
    r"the deposit is \'80 2,900 \endash  due 1 Oct.\par"
    "\n"
    r"Caf\'e9 \u8364? and \u-4064?\tab tab\par"
    "\n"
    r"{\field{\*\fldinst HYPERLINK https://x.example}{\fldrslt see link}}\line next\par"
    "\n"
    r"{\pict\wmetafile8 0a0b0c0d}Braces \{ok\} and \\ backslash\par"
    "\n"
    "}"
)


def test_rtf_is_read_as_text_by_paragraph(tmp_path: Path) -> None:
    result = read(tmp_path, "letter.rtf", RTF.encode("ascii"))
    assert result.status == "ok" and result.reader == "rtf"
    assert result.segments[0].text == (
        "Dear Oskar,\n\nthe deposit is € 2,900 \u2013 due 1 Oct.\nCafé € and \uf020\ttab\nsee link\nnext\n"
        "Braces {ok} and \\ backslash"
    )
    assert positions(result) == [{"unit": "paragraph", "position": {"line": 1, "line_end": 7}}]
    assert isinstance(parse_locator(result.segments[0].locator.dump()), LineLocator)


def test_rtf_code_page_and_unicode_skip() -> None:
    assert rtf_to_text(r"{\rtf1\ansi\ansicpg1251 \'cf\'f0\'e8\'e2\'e5\'f2}") == "Привет"
    assert rtf_to_text(r"{\rtf1\uc2 a\u20320\'c4\'e3b}") == "a你b"


def test_rtf_without_header_is_read_as_text(tmp_path: Path) -> None:
    result = read(tmp_path, "plain.rtf", "not really rtf\n")
    assert result.status == "partial" and result.notes == ["no RTF header: read as plain text"]
    assert result.segments[0].text == "not really rtf"
    assert positions(result) == [{"unit": "lines", "position": {"line": 1}}]
