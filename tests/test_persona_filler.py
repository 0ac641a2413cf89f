"""Template filler as exchanges (issue 20, "logs people would write"): every reply is written for the kind of
message it answers, evidence lines get tone-neutral replies, lines rarely repeat within a persona, and the
phrase bank's new sections are validated like the others."""

from __future__ import annotations

import copy
import json
import random
import string
from collections.abc import Callable
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from hippocamp.synth.personas import SetConfig, run_set
from hippocamp.synth.personas import filler as F
from hippocamp.synth.personas.banks import (
    ACTS,
    MESSAGE_SLOTS,
    TONES,
    fact_bank,
    phrase_bank,
)
from hippocamp.synth.personas.verify import has_term
from hippocamp.synth.realism import BAD_NEWS, CELEBRATION, COMMISERATION, GOOD_NEWS, audit_set
from test_pcontext_banks import _phrases, _refused

PHRASES: dict[str, Any] = json.loads(
    resources.files("hippocamp.synth.personas").joinpath("data/phrases.json").read_text(encoding="utf-8")
)


def _slots(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


# -- the bank ------------------------------------------------------------------------------------------------


def test_exchanges_cover_the_acts_and_tones_and_name_known_slots() -> None:
    bank = phrase_bank()
    assert len(bank.exchanges) >= 50
    assert {e.act for e in bank.exchanges} == set(ACTS)
    assert {e.tone for e in bank.exchanges} == set(TONES)
    known = MESSAGE_SLOTS | set(bank.words)
    texts = [*bank.hellos, *bank.signoffs, *(t for e in bank.exchanges for t in (*e.open, *e.reply, *e.follow))]
    for text in texts:
        assert _slots(text) <= known, text


def test_no_chat_phrase_or_word_names_a_fact() -> None:
    terms = [t for s in fact_bank().specs() for t in (s.label, *s.synonyms)]
    bank = phrase_bank()
    texts = [*bank.hellos, *bank.signoffs, *bank.neutral_replies]
    texts += [t for e in bank.exchanges for t in (*e.open, *e.reply, *e.follow)]
    texts += [w for words in bank.words.values() for w in words]
    for text in texts:
        assert not [t for t in terms if has_term(text, t)], text


def test_neutral_replies_neither_cheer_nor_commiserate() -> None:
    """An evidence line may be good or bad news: its reply must fit both (judged by the audit's own words)."""
    for reply in phrase_bank().neutral_replies:
        low = reply.lower()
        assert not CELEBRATION.search(low) and not COMMISERATION.search(low), reply


def test_replies_fit_the_tone_of_their_exchange() -> None:
    """Bad news is never laughed at or cheered; good news is never commiserated; no opener of a neutral
    exchange reads as news to the audit's eyes, whatever its slots hold."""
    rng = random.Random(5)
    at = datetime(2024, 5, 8, 10, 30)
    for ex in phrase_bank().exchanges:
        for _ in range(30):
            opener = F.fill(rng.choice(ex.open), rng, name="Sam").lower()
            reply = F.fill(rng.choice(ex.reply), rng, name="Sam").lower()
            if ex.tone == "bad":
                assert not (CELEBRATION.search(reply) and not COMMISERATION.search(reply)), (ex.topic, reply)
            elif ex.tone == "good":
                assert not COMMISERATION.search(reply), (ex.topic, reply)
            else:
                assert not BAD_NEWS.search(opener) and not GOOD_NEWS.search(opener), (ex.topic, opener)
    assert at  # the date plays no part here


def _first_topic() -> str:
    return f"exchanges[0] ({PHRASES['exchanges'][0]['topic']!r})"


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str, str]] = [
    ("unknown exchange key", lambda d: d["exchanges"][0].update(mood="x"), "first", "mood", "Extra inputs"),
    ("unknown act", lambda d: d["exchanges"][0].update(act="gossip"), "first", "act", "unknown dialogue act"),
    ("unknown tone", lambda d: d["exchanges"][0].update(tone="meh"), "first", "tone", "unknown tone 'meh'"),
    ("empty openers", lambda d: d["exchanges"][0].update(open=[]), "first", "open", "at least 1 item"),
    ("empty replies", lambda d: d["exchanges"][0].update(reply=[]), "first", "reply", "at least 1 item"),
    ("reply not a string", lambda d: d["exchanges"][0]["reply"].__setitem__(0, 3), "first", "reply.0",
     "valid string"),
    ("follow not a list", lambda d: d["exchanges"][0].update(follow="ok"), "first", "follow", "valid tuple"),
    ("missing topic", lambda d: d["exchanges"][0].pop("topic"), "exchanges[0]", "topic", "Field required"),
    ("no exchanges", lambda d: d.update(exchanges=[]), "(top level)", "exchanges", "at least 1 item"),
    ("no hellos", lambda d: d.update(hellos=[]), "(top level)", "hellos", "at least 1 item"),
    ("missing neutral replies", lambda d: d.pop("neutral_replies"), "(top level)", "neutral_replies",
     "Field required"),
    ("unknown slot in a reply", lambda d: d["exchanges"][0]["reply"].__setitem__(1, "ok {fodo}"), "first", "reply.1",
     "unknown slot {fodo}"),
    ("unknown slot in a hello", lambda d: d["hellos"].__setitem__(0, "hi {nmae}"), "hellos", "0",
     "unknown slot {nmae}"),
    ("broken template", lambda d: d["signoffs"].__setitem__(0, "bye {"), "signoffs", "0", "not a template"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "edit", "entry", "field", "reason"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_exchange_section_is_refused_naming_file_entry_and_field(
    tmp_path: Path, what: str, edit: Callable[[dict[str, Any]], None], entry: str, field: str, reason: str
) -> None:
    data = copy.deepcopy(PHRASES)
    edit(data)
    _refused(tmp_path, _phrases, data, _first_topic() if entry == "first" else entry, field, reason)


# -- the exchange logic --------------------------------------------------------------------------------------


class _Ctx:
    """The little of a `LogContext` the writer reads: the facts."""

    def __init__(self, facts: list[Any]) -> None:
        self.facts = facts


def test_a_chat_is_opener_reply_and_follow_up_by_alternating_senders() -> None:
    writer = F._Writer(_Ctx([]), random.Random(3))  # type: ignore[arg-type]
    at = datetime(2024, 3, 12, 15, 0)
    by_text = {t: e for e in phrase_bank().exchanges for t in e.open}
    seen = 0
    for _ in range(200):
        lines = F._chat(writer, at, "c1", {"me": "Sam", "c1": "Ana"})
        assert 2 <= len(lines) <= 6
        senders = [who for who, *_ in lines]
        assert senders[0] != senders[1]  # the first line is answered by the other side
        assert all(kind == "filler" for _, _, kind, *_ in lines)
        seen += sum(1 for _, text, *_ in lines if text in by_text)
    assert seen > 0  # plain openers (no slots) do appear as written


def test_the_writer_avoids_repeats_and_fact_cues() -> None:
    class _Fact:
        label, synonyms, cues = "keeps bees", ("beekeeping",), ("tacos", "pizza")

    writer = F._Writer(_Ctx([_Fact()]), random.Random(1))  # type: ignore[arg-type]
    at = datetime(2024, 3, 12, 18, 0)
    texts = [writer.line(["want {food} {day}?", "ok {food}"], at) for _ in range(150)]
    assert all(t is not None for t in texts)
    assert not [t for t in texts if t and ("tacos" in t or "pizza" in t)]
    assert len(set(texts)) >= 0.9 * len(texts)
    assert writer.line(["tacos again"], at) is None  # every draw cues a fact: no line


def test_hellos_keep_to_the_time_of_day() -> None:
    writer = F._Writer(_Ctx([]), random.Random(2))  # type: ignore[arg-type]
    evening = datetime(2024, 3, 12, 19, 30)
    for _ in range(200):
        text = writer.line(phrase_bank().hellos, evening, name="Sam")
        assert text and "morning" not in text.lower()


def test_a_generated_set_has_fitting_replies_and_varied_filler(tmp_path: Path) -> None:
    run_set(SetConfig(out=tmp_path / "s", n=2, seed=4))
    report = audit_set(tmp_path / "s")
    assert report.figures["replies"]["contradicting"] == 0
    assert report.figures["replies"]["pairs"] > 100
    assert report.figures["filler"]["distinct_share_min"] >= 0.9
    assert report.figures["message_dates"]["contradicting"] == 0
