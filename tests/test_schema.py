from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import GOOD_RECORDS, write_json
from hippocamp.schema import (
    AgentCap,
    Evidence,
    HippoCampRecord,
    PageLocator,
    RecordsFileError,
    TimeRange,
    dump_records,
    read_records,
    write_records,
)

# The release's spelling: agent_cap is a JSON *string* with evidence_perception, empty locators,
# rationale steps without step_id, and fields the paper does not name.
RELEASE = [
    {
        "id": "bei_012",
        "question": "How much did I pay for the Kyoto hotel?",
        "answer": "$412.50 for 3 nights at Hotel Sakura [booking.pdf].",
        "QA_type": "factual_retention",
        "profiling_type": "",
        "data_source": "Bei",
        "file_path": ["Travel/booking.pdf", "Recordings/memo 1.wav"],
        "file_number": 2,
        "file_modality": ["document", "audio"],
        "file_type": ["pdf", "wav"],
        "file_text": ["Hotel Sakura ...", "the hotel was ..."],
        "gold_text": "Total $412.50",
        "evidence_text_joined": "Total $412.50 || three nights",
        "agent_cap": '{"search": ["semantic"], "evidence_perception": ["document_understanding", '
        '"audio_understanding"], "reasoning": ["basic"]}',
        "evidence": [
            {
                "evidence_id": 1,
                "file_path": "Travel/booking.pdf",
                "modality_type": "document",
                "evidence_text": "Hotel Sakura, 3 nights, total $412.50",
                "evidence_locator": [],
            },
            {
                "evidence_id": 2,
                "file_path": "Recordings/memo 1.wav",
                "modality_type": "audio",
                "evidence_text": "the hotel was 412 fifty",
                "evidence_locator": [{"unit": "timestamp", "position": {"start": "00:00:01", "end": "00:00:02.5"}}],
            },
        ],
        "rationale": [
            {"rationale_text": "Find the booking.", "evidence_id": []},
            {"rationale_text": "Read the total.", "evidence_id": [1, 2]},
        ],
        "annotator_note": {"kept": True},
    }
]

# The paper's spelling: agent_cap an object with perception, step ids, typed locators.
PAPER = [
    {
        "id": 7,
        "question": "Which page states the deposit?",
        "answer": "Page 2 of the lease.",
        "QA_type": "factual_retention",
        "file_path": ["lease.pdf"],
        "file_number": 1,
        "file_modality": ["document"],
        "agent_cap": {"search": ["system"], "perception": ["grounding"], "reasoning": ["computation", "verification"]},
        "evidence": [
            {
                "evidence_id": "e1",
                "file_path": "lease.pdf",
                "modality_type": "document",
                "evidence_text": "Deposit",
                "evidence_locator": [
                    {"unit": "page", "position": {"system_page": 3, "printed_page": "2"}},
                    {"unit": "region", "position": {"page": 3, "bbox": [72, 700, 300, 720]}},
                ],
            },
        ],
        "rationale": [
            {"step_id": 1, "rationale_text": "plan", "evidence_id": []},
            {"step_id": 2, "rationale_text": "read", "evidence_id": ["e1"]},
        ],
    }
]

# The release repository's benchmark_example.json: evidence as {file_path, page, content}.
EXAMPLE = [
    {
        "id": "q001",
        "question": "What was net revenue for Q2 2025?",
        "answer": "$12,859 million",
        "file_path": ["Intel/10q.pdf"],
        "evidence": [{"file_path": "Intel/10q.pdf", "page": 5, "content": "Net revenue: $12,859 million"}],
    },
    {"id": "q002", "question": "Total revenue?", "answer": "$391.0 billion", "file_path": ["aapl/10k.pdf"]},
]


@pytest.mark.parametrize("data", [RELEASE, PAPER, EXAMPLE, GOOD_RECORDS], ids=["release", "paper", "example", "good"])
def test_round_trip_gives_back_the_same_json(tmp_path: Path, data):
    path = write_json(tmp_path / "records.json", data)
    rf = read_records(path)
    assert rf.problems == []
    out = dump_records(rf)
    assert out == data
    assert json.dumps(out) == json.dumps(data)  # same key order too
    write_records(tmp_path / "again.json", out)
    assert json.loads((tmp_path / "again.json").read_text()) == data


def test_both_spellings_read_into_the_same_fields(tmp_path: Path):
    release = read_records(write_json(tmp_path / "r.json", RELEASE)).records[0]
    paper = read_records(write_json(tmp_path / "p.json", PAPER)).records[0]
    assert release.style == "release" and paper.style == "paper"
    assert release.qa_type == paper.qa_type == "factual_retention"
    assert release.agent_cap.perception == ["document_understanding", "audio_understanding"]
    assert paper.agent_cap.perception == ["grounding"]
    assert release.rationale[1].evidence_keys == ["1", "2"]
    assert isinstance(release.evidence[1].locators[0], TimeRange)
    assert release.evidence[1].locators[0].end == 2.5
    assert isinstance(paper.evidence[0].locators[0], PageLocator)
    example = read_records(write_json(tmp_path / "e.json", EXAMPLE)).records[0]
    assert example.evidence[0].evidence_text == "Net revenue: $12,859 million"
    assert example.evidence[0].locators[0].system_page == 5


def test_edits_are_written_in_the_spelling_that_was_read(tmp_path: Path):
    rf = read_records(write_json(tmp_path / "r.json", RELEASE))
    rec = rf.records[0]
    rec.agent_cap.reasoning = ["computation"]
    rec.evidence[0].locators.append(PageLocator(system_page=2))
    out = dump_records(rf)[0]
    assert isinstance(out["agent_cap"], str)  # still a JSON string
    assert json.loads(out["agent_cap"]) == {
        "search": ["semantic"],
        "evidence_perception": ["document_understanding", "audio_understanding"],
        "reasoning": ["computation"],
    }
    assert out["evidence"][0]["evidence_locator"] == [{"unit": "page", "position": {"system_page": 2}}]
    assert out["evidence"][1] == RELEASE[0]["evidence"][1]  # untouched items stay byte-identical
    assert out["annotator_note"] == {"kept": True}
    assert list(out) == list(RELEASE[0])

    rf = read_records(write_json(tmp_path / "p.json", PAPER))
    rf.records[0].agent_cap.search.append("semantic")
    out = dump_records(rf)[0]
    assert out["agent_cap"] == {
        "search": ["system", "semantic"],
        "perception": ["grounding"],
        "reasoning": ["computation", "verification"],
    }

    rf = read_records(write_json(tmp_path / "e.json", EXAMPLE))
    rf.records[0].evidence[0].locators[0].system_page = 6
    out = dump_records(rf)[0]["evidence"][0]
    assert "page" not in out and out["evidence_locator"] == [{"unit": "page", "position": {"system_page": 6}}]


def test_new_records_are_written_in_the_chosen_style():
    rec = HippoCampRecord(
        id="n1",
        question="Q?",
        answer="A.",
        qa_type="profiling",
        file_path=["a.txt"],
        agent_cap=AgentCap(search=["semantic"], perception=["grounding"], reasoning=["basic"]),
        evidence=[Evidence(evidence_id=1, file_path="a.txt", modality_type="text", evidence_text="A.")],
    )
    release = rec.dump("release")
    assert release["QA_type"] == "profiling"
    assert json.loads(release["agent_cap"]) == {
        "search": ["semantic"],
        "evidence_perception": ["grounding"],
        "reasoning": ["basic"],
    }
    paper = rec.dump("paper")
    assert paper["agent_cap"] == {"search": ["semantic"], "perception": ["grounding"], "reasoning": ["basic"]}
    again = HippoCampRecord.model_validate(release)
    assert again.agent_cap.perception == ["grounding"] and again.dump() == release


def test_containers_jsonl_and_object(tmp_path: Path):
    jl = tmp_path / "r.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in GOOD_RECORDS), encoding="utf-8")
    rf = read_records(jl)
    assert rf.container == "jsonl" and [r.key for r in rf.records] == ["q1", "q2", "q3"]
    wrapped = {"name": "Tiny", "records": GOOD_RECORDS}
    rf = read_records(write_json(tmp_path / "w.json", wrapped))
    assert rf.container == "object" and dump_records(rf) == wrapped
    single = read_records(write_json(tmp_path / "s.json", GOOD_RECORDS[0]))
    assert single.container == "single" and dump_records(single) == GOOD_RECORDS[0]


def test_malformed_json_names_line_and_column(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('[\n  {"id": "a",\n   "question": "x" "answer": "y"}\n]\n', encoding="utf-8")
    with pytest.raises(RecordsFileError) as err:
        read_records(bad)
    assert err.value.line == 3 and err.value.column == 20
    assert str(err.value).startswith(f"{bad}:3:20: not valid JSON")
    with pytest.raises(RecordsFileError, match="no such file"):
        read_records(tmp_path / "missing.json")
    (tmp_path / "num.json").write_text("42", encoding="utf-8")
    with pytest.raises(RecordsFileError, match="top level must be an array"):
        read_records(tmp_path / "num.json")


def test_bad_records_are_reported_and_the_rest_read(tmp_path: Path):
    data = [
        GOOD_RECORDS[0],
        {"question": "no id"},
        {"id": "x", "agent_cap": "{not json", "question": "q", "answer": "a"},
        {"id": "y", "evidence": [{"evidence_id": 1, "evidence_locator": "p. 3", "file_path": 5}]},
        "not an object",
        GOOD_RECORDS[0],
    ]
    rf = read_records(write_json(tmp_path / "mixed.json", data))
    assert [r.key for r in rf.records] == ["q1", "q1"]
    assert rf.indices == [0, 5]
    by_index = {(p.record_index, p.field): p for p in rf.problems}
    assert (1, "id") in by_index and "Field required" in by_index[(1, "id")].message
    assert "agent_cap is a string but not valid JSON" in by_index[(2, "")].message
    assert by_index[(2, "")].record_id == "x"
    assert (3, "evidence[0].file_path") in by_index
    assert (4, "") in by_index
    dup = by_index[(5, "id")]
    assert "duplicate record id" in dup.message and dup.severity == "error"
    assert all(p.file == str(tmp_path / "mixed.json") for p in rf.problems)
