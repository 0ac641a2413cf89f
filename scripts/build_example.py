"""Build the bundled example profile (src/hippocamp/examples/Mira) in the HippoCamp release layout.

A tiny personal computer of a fictional person, Mira Okafor: a lease PDF with printed page labels,
a spoken voice memo (espeak-ng), a photographed vet receipt, a budget workbook, a calendar, an
e-mail, notes and a distractor download; six questions in the release's spelling whose evidence
locators point at real pages, seconds, pixels, cells and lines. Run from the repository root:

    .venv/bin/python scripts/build_example.py

Needs reportlab (a core dependency) and espeak-ng (apt) at build time only; the output is committed.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "hippocamp" / "examples" / "Mira"
ROOT = OUT / "Mira"


def pdf(path: Path, pages: list[list[str]], labels: list[tuple[int, str, int]] | None = None) -> None:
    from pypdf import PdfReader, PdfWriter
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=1)
    for lines in pages:
        y = 780
        for line in lines:
            c.setFont("Helvetica-Bold" if line.isupper() else "Helvetica", 12)
            c.drawString(72, y, line)
            y -= 20
        c.showPage()
    c.save()
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(buf.getvalue())))
    for first, style, start in labels or []:
        last = next((f - 1 for f, _, _ in (labels or []) if f > first), len(pages) - 1)
        writer.set_page_label(first, last, style, start=start)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        writer.write(fh)


def speech(path: Path, text: str) -> None:
    exe = shutil.which("espeak-ng")
    if exe is None:
        sys.exit("espeak-ng is needed to build the example's voice memo (apt-get install espeak-ng)")
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([exe, "-v", "en-us", "-s", "150", "-w", str(path), text], check=True)


def receipt(path: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (480, 640), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=22)
    small = ImageFont.load_default(size=18)
    rows = [
        (40, "Paws & Claws Veterinary", font),
        (80, "Westersingel 12, Rotterdam", small),
        (150, "Patient: Biscuit (dog)", small),
        (190, "Date: 12 Oct 2024  10:30", small),
        (260, "Vaccination booster   EUR 86.00", small),
        (320, "TOTAL PAID            EUR 86.00", font),
        (400, "Thank you!", small),
    ]
    for y, text, f in rows:
        draw.text((30, y), text, fill="black", font=f)
    draw.rectangle((20, 250, 460, 355), outline="black", width=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, format="PNG", optimize=True)


def workbook(path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "October"
    for row in [
        ("Category", "Amount (EUR)"),
        ("Rent", 1450),
        ("Groceries", 310.25),
        ("Vet", 86),
        ("Gym", 39),
        ("Total", "=SUM(B2:B5)"),
    ]:
        ws.append(row)
    sept = wb.create_sheet("September")
    for row in [("Category", "Amount (EUR)"), ("Rent", 1450), ("Groceries", 298.4), ("Gym", 39)]:
        sept.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)


def text(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8", newline="\n")


ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//hippocamp example//EN
BEGIN:VEVENT
UID:gym-1@mira.example
DTSTART:20240903T070000
DTEND:20240903T080000
RRULE:FREQ=WEEKLY;BYDAY=TU,TH
SUMMARY:Gym - FitHub Blaak
LOCATION:FitHub Blaak, Rotterdam
END:VEVENT
BEGIN:VEVENT
UID:vet-1@mira.example
DTSTART:20241012T103000
DTEND:20241012T110000
SUMMARY:Biscuit - vaccination booster
LOCATION:Paws & Claws Veterinary
END:VEVENT
BEGIN:VEVENT
UID:sis-1@mira.example
DTSTART:20241015T090000
DTEND:20241015T093000
SUMMARY:Dentist (Amara)
END:VEVENT
END:VCALENDAR
"""

EML = """From: Oskar Lindqvist <oskar.lindqvist@example.org>
To: Mira Okafor <mira.okafor@example.org>
Date: Tue, 20 Aug 2024 18:02:11 +0200
Subject: Re: lease
Message-ID: <lease-2024-08-20@example.org>
Content-Type: text/plain; charset=utf-8

Hi Mira,

Thanks for signing. I will hand over the keys on 31 August 2024 at 17:00,
at the flat on Nieuwe Binnenweg.

Best,
Oskar Lindqvist
"""

GYM_MD = """# Gym routine

- Gym on Tuesdays and Thursdays, 7:00 am, at FitHub Blaak
- Membership: EUR 39 per month, paid on the 5th
- Goal for autumn: 5 km run under 30 minutes
"""


def cap(search: list[str], perception: list[str], reasoning: list[str]) -> str:
    return json.dumps({"search": search, "evidence_perception": perception, "reasoning": reasoning})


def records() -> list[dict]:
    lease = "Documents/Housing/Lease Agreement 2024.pdf"
    memo = "Recordings/voice memo 2024-10-03.wav"
    ics = "Calendar/personal.ics"
    receipt_png = "Pictures/Receipts/IMG_2041.png"
    budget = "Documents/Finance/budget 2024.xlsx"
    gym = "Notes/gym routine.md"
    mail = "Mail/2024-08-20 Re lease.eml"
    return [
        {
            "id": "mira_001",
            "question": "How much is my monthly rent, and when did my lease start?",
            "answer": "EUR 1,450 per month; the lease started on 1 September 2024 [Lease Agreement 2024.pdf].",
            "QA_type": "factual_retention",
            "profiling_type": "",
            "data_source": "Mira",
            "file_path": [lease],
            "file_number": 1,
            "file_modality": ["document"],
            "file_type": ["pdf"],
            "agent_cap": cap(["semantic"], ["document_understanding"], ["basic"]),
            "evidence": [
                {
                    "evidence_id": 1,
                    "file_path": lease,
                    "modality_type": "document",
                    "evidence_text": (
                        "Monthly rent: EUR 1,450, due on the 1st of each month. The term starts on 1 September 2024."
                    ),
                    "evidence_locator": [{"unit": "page", "position": {"system_page": 2, "printed_page": "1"}}],
                }
            ],
            "rationale": [
                {"rationale_text": "Look for the lease among the housing documents.", "evidence_id": []},
                {"rationale_text": "Read the rent and the term on page 1 of the agreement.", "evidence_id": [1]},
            ],
        },
        {
            "id": "mira_002",
            "question": "When is Biscuit's vet appointment?",
            "answer": "On 12 October 2024 at 10:30.",
            "QA_type": "factual_retention",
            "profiling_type": "",
            "data_source": "Mira",
            "file_path": [memo, ics],
            "file_number": 2,
            "file_modality": ["audio", "text"],
            "file_type": ["wav", "ics"],
            "agent_cap": cap(["semantic"], ["audio_understanding", "grounding"], ["verification"]),
            "evidence": [
                {
                    "evidence_id": 1,
                    "file_path": memo,
                    "modality_type": "audio",
                    "evidence_text": "Reminder: Biscuit's vet appointment is on October twelfth at ten thirty.",
                    "evidence_locator": [{"unit": "timestamp", "position": {"start": "00:00:00", "end": "00:00:03.5"}}],
                },
                {
                    "evidence_id": 2,
                    "file_path": ics,
                    "modality_type": "text",
                    "evidence_text": (
                        "DTSTART:20241012T103000 SUMMARY:Biscuit - vaccination booster (12 October 2024, 10:30)"
                    ),
                    "evidence_locator": [{"unit": "line", "position": "13-18"}],
                },
            ],
            "rationale": [
                {"rationale_text": "The appointment may be in a voice memo or the calendar.", "evidence_id": []},
                {"rationale_text": "The voice memo gives the day and time.", "evidence_id": [1]},
                {"rationale_text": "The calendar event confirms 12 October 2024 at 10:30.", "evidence_id": [2]},
            ],
        },
        {
            "id": "mira_003",
            "question": "How much did I spend in October on rent, groceries, the vet and the gym together?",
            "answer": "EUR 1,885.25.",
            "QA_type": "factual_retention",
            "profiling_type": "",
            "data_source": "Mira",
            "file_path": [budget],
            "file_number": 1,
            "file_modality": ["document"],
            "file_type": ["xlsx"],
            "agent_cap": cap(["semantic"], ["document_understanding"], ["computation"]),
            "evidence": [
                {
                    "evidence_id": 1,
                    "file_path": budget,
                    "modality_type": "document",
                    "evidence_text": "Rent 1450; Groceries 310.25; Vet 86; Gym 39 (sum 1,885.25)",
                    "evidence_locator": [{"unit": "cells", "position": "October!A2:B5"}],
                }
            ],
            "rationale": [
                {"rationale_text": "Open the 2024 budget workbook.", "evidence_id": []},
                {"rationale_text": "Read the four October amounts.", "evidence_id": [1]},
                {"rationale_text": "Add them: 1450 + 310.25 + 86 + 39.", "evidence_id": [1]},
            ],
        },
        {
            "id": "mira_004",
            "question": "What did the vet charge for Biscuit's vaccination booster, and where?",
            "answer": "EUR 86.00, at Paws & Claws Veterinary, on 12 October 2024.",
            "QA_type": "factual_retention",
            "profiling_type": "",
            "data_source": "Mira",
            "file_path": [receipt_png],
            "file_number": 1,
            "file_modality": ["image"],
            "file_type": ["png"],
            "agent_cap": cap(["semantic"], ["image_understanding"], ["basic"]),
            "evidence": [
                {
                    "evidence_id": 1,
                    "file_path": receipt_png,
                    "modality_type": "image",
                    "evidence_text": "Receipt of Paws & Claws Veterinary, 12 Oct 2024: Vaccination booster EUR 86.00",
                    "evidence_locator": [
                        {"unit": "region", "position": {"bbox": [20, 250, 460, 355], "box_units": "px"}}
                    ],
                }
            ],
            "rationale": [
                {"rationale_text": "Vet bills could be photographed receipts.", "evidence_id": []},
                {"rationale_text": "The receipt lists the booster and its price.", "evidence_id": [1]},
            ],
        },
        {
            "id": "mira_005",
            "question": "What is my weekly exercise routine?",
            "answer": "The gym on Tuesdays and Thursdays at 7:00 am, at FitHub Blaak.",
            "QA_type": "profiling",
            "profiling_type": "routine",
            "data_source": "Mira",
            "file_path": [gym, ics],
            "file_number": 2,
            "file_modality": ["text"],
            "file_type": ["md", "ics"],
            "agent_cap": cap(["semantic"], ["document_understanding"], ["summarization"]),
            "evidence": [
                {
                    "evidence_id": 1,
                    "file_path": gym,
                    "modality_type": "text",
                    "evidence_text": "Gym on Tuesdays and Thursdays, 7:00 am, at FitHub Blaak",
                    "evidence_locator": [{"unit": "line", "position": 3}],
                },
                {
                    "evidence_id": 2,
                    "file_path": ics,
                    "modality_type": "text",
                    "evidence_text": "RRULE:FREQ=WEEKLY;BYDAY=TU,TH SUMMARY:Gym - FitHub Blaak, 07:00",
                    "evidence_locator": [{"unit": "line", "position": "4-11"}],
                },
            ],
            "rationale": [
                {"rationale_text": "Routines show in notes and recurring events.", "evidence_id": []},
                {"rationale_text": "The note names the days, time and gym.", "evidence_id": [1]},
                {"rationale_text": "A weekly recurring event on Tuesday and Thursday agrees.", "evidence_id": [2]},
            ],
        },
        {
            "id": "mira_006",
            "question": "Who is my landlord, and when were the keys handed over?",
            "answer": "Oskar Lindqvist; he handed over the keys on 31 August 2024 at 17:00.",
            "QA_type": "factual_retention",
            "profiling_type": "",
            "data_source": "Mira",
            "file_path": [mail, lease],
            "file_number": 2,
            "file_modality": ["text", "document"],
            "file_type": ["eml", "pdf"],
            "agent_cap": cap(["semantic"], ["document_understanding"], ["basic"]),
            "evidence": [
                {
                    "evidence_id": 1,
                    "file_path": lease,
                    "modality_type": "document",
                    "evidence_text": "Landlord: Oskar Lindqvist",
                    "evidence_locator": [{"unit": "page", "position": {"system_page": 3, "printed_page": "2"}}],
                },
                {
                    "evidence_id": 2,
                    "file_path": mail,
                    "modality_type": "text",
                    "evidence_text": "I will hand over the keys on 31 August 2024 at 17:00",
                    "evidence_locator": [{"unit": "line", "position": "10-11"}],
                },
            ],
            "rationale": [
                {"rationale_text": "The landlord is named in the lease and writes about the keys.", "evidence_id": []},
                {"rationale_text": "The lease names the landlord.", "evidence_id": [1]},
                {"rationale_text": "His e-mail gives the handover date and time.", "evidence_id": [2]},
            ],
        },
    ]


FILE_TIMES = {
    "Documents/Housing/Lease Agreement 2024.pdf": ("2024-08-19 21:14:00", "2024-08-19 21:14:00", ""),
    "Mail/2024-08-20 Re lease.eml": ("2024-08-20 18:02:11", "2024-08-20 18:02:11", ""),
    "Notes/gym routine.md": ("2024-09-02 07:45:00", "2024-10-01 08:10:00", ""),
    "Calendar/personal.ics": ("2024-09-01 10:00:00", "2024-10-04 19:30:00", ""),
    "Recordings/voice memo 2024-10-03.wav": ("2024-10-03 12:31:05", "2024-10-03 12:31:05", "Rotterdam, NL"),
    "Pictures/Receipts/IMG_2041.png": ("2024-10-12 11:02:44", "2024-10-12 11:02:44", "51.9180 N, 4.4720 E"),
    "Documents/Finance/budget 2024.xlsx": ("2024-09-01 20:00:00", "2024-10-31 21:40:00", ""),
    "Downloads/flyer (1).pdf": ("2024-09-14 16:20:00", "2024-09-14 16:20:00", ""),
}


def metadata(path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "files"
    ws.append(["FilePath", "FileType", "creation_date", "modification_date", "location"])
    for folder in sorted({str(Path(p).parent) for p in FILE_TIMES}):
        ws.append([folder, "folder", None, None, None])
    for rel, (created, modified, location) in FILE_TIMES.items():
        ws.append(
            [
                rel,
                Path(rel).suffix.lstrip("."),
                datetime.fromisoformat(created),
                datetime.fromisoformat(modified),
                location or None,
            ]
        )
    wb.save(path)


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    ROOT.mkdir(parents=True)
    pdf(
        ROOT / "Documents/Housing/Lease Agreement 2024.pdf",
        [
            ["RESIDENTIAL LEASE AGREEMENT", "Flat 3B, Nieuwe Binnenweg 210, Rotterdam", "Tenant: Mira Okafor", "i"],
            [
                "1. RENT AND TERM",
                "Monthly rent: EUR 1,450, due on the 1st of each month.",
                "The term starts on 1 September 2024 and runs for twelve months.",
                "1",
            ],
            [
                "2. PARTIES AND DEPOSIT",
                "Landlord: Oskar Lindqvist",
                "Deposit: EUR 2,900, returned within 30 days.",
                "2",
            ],
        ],
        labels=[(0, "/r", 1), (1, "/D", 1)],
    )
    pdf(ROOT / "Downloads/flyer (1).pdf", [["AUTUMN MARKET", "Every Saturday in October at the Markthal."]])
    speech(
        ROOT / "Recordings/voice memo 2024-10-03.wav",
        "Reminder: Biscuit's vet appointment is on October twelfth at ten thirty.",
    )
    receipt(ROOT / "Pictures/Receipts/IMG_2041.png")
    workbook(ROOT / "Documents/Finance/budget 2024.xlsx")
    text(ROOT / "Calendar/personal.ics", ICS.replace("\n", "\r\n"))
    text(ROOT / "Mail/2024-08-20 Re lease.eml", EML)
    text(ROOT / "Notes/gym routine.md", GYM_MD)
    (OUT / "Mira.json").write_text(json.dumps(records(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    metadata(OUT / "Mira_files.xlsx")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
