"""An independent realism audit of a generated P-ContextBench persona set (issue #20).

The construction pipeline checks its own output with its own banks and cues, so a set can pass every
one of its checks and still read as implausible. This audit is the second opinion the issue asks for:
it reads only the files a set writes on disk (``persona.json``, ``facts.json``, ``messenger.jsonl``,
``calendar.jsonl``, ``clusters.jsonl``, ``cases.jsonl`` in each persona folder) with the standard
library, and shares no code, bank or rule with the sampler. Its own rule tables live here as data
(`FACT_CLASSES`, `CONSTRAINT_RULES`, the date, holiday and reply lexicons), matched by regular
expressions over the words a reader sees, so a generator cannot pass it by agreeing with itself.

Figures (`RealismReport.figures`, one group per issue criterion):

1. ``shared_facts``: for every ordered pair of personas, the share of one's facts whose normalised
   label also appears among the other's; their mean, extremes, the share of facts found in any other
   persona, and the facts every persona holds. ``template_*`` repeats the measure with numbers and
   capitalised names masked, so parametrised copies of one fact count as shared.
2. ``constraints``: findings of `CONSTRAINT_RULES` (diet families, childhood origins, age and
   life-stage bounds, household, education and working status against the seed, mutually exclusive
   states that hold at the same time). ``violation`` findings are contradictions; ``suspicious`` ones
   are possible lives that a reader would doubt, counted apart.
3. ``filler``: the share of distinct lines among each persona's filler messages (worst persona, mean,
   and across the whole set) and the most repeated lines.
4. ``calendar_notes``: events whose title or own notes state a start time or weekday the event does
   not have. Only a claim about the event itself counts: a chunk of the notes that is nothing but a
   time ("7pm", "at 19:00", "Sat 9am", "5-8pm"), a title ending "at <time>" or starting with one, a
   title starting with a weekday. Times with other words ("pick her up 9:15", "leave by 5") and the
   details of other items merged into the notes ("...; Title: 3pm") are not the event's start.
5. ``message_dates``: messages whose text contradicts their own send date: the month ("can't believe
   it's already April" on 12 March), the weekday ("happy Friday" on a Tuesday, "almost the weekend" on
   a Sunday), the season ("this summer heat" in January; northern hemisphere, one month of slack), a
   holiday as current or near ("happy Thanksgiving" in May, "Tet is coming" in April). The clock
   ("morning!" at 8pm, "it's noon" at 5pm) is reported apart, as ``time_of_day``.
6. ``split``: evidence fragments by app (messenger share; the paper's main run has 65/35).
7. ``cases``: per case type, counts, facts per case, supporting fragments, the apps a case's evidence
   comes from, and cases whose supporting fragments are not in the logs.
8. ``replies``: adjacent messages of one session from different senders where the reply's sentiment
   contradicts the message: commiseration after good news, celebration or laughter after bad news.

Every check prefers precision to recall: a finding should be a contradiction a reader would agree
with, so a count of 0 is a floor, not a proof of realism. `TARGETS` are the issue's thresholds; the
report says whether each is met but enforces nothing.
"""

from __future__ import annotations

import json
import re
import statistics
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "CONSTRAINT_RULES",
    "FACT_CLASSES",
    "HOLIDAYS",
    "TARGETS",
    "Finding",
    "RealismInputError",
    "RealismReport",
    "Rule",
    "audit_set",
    "plausibility",
]

Severity = Literal["violation", "suspicious", "info"]

#: a persona sharing more than this share of its facts with another is named in a finding
_SHARED_LIMIT = 0.10
#: the issue's thresholds: figure path -> (comparison, bound, what it means); "in" takes a (low, high) range
TARGETS: dict[str, tuple[str, float | tuple[float, float], str]] = {
    "shared_facts.mean_pairwise": ("<=", 0.10, "mean pairwise shared facts"),
    "constraints.violations": ("==", 0, "constraint violations"),
    "filler.distinct_share_min": (">=", 0.90, "distinct filler lines (worst persona)"),
    "calendar_notes.contradicting": ("==", 0, "calendar notes that contradict their event"),
    "message_dates.contradicting": ("==", 0, "messages whose date contradicts their content"),
    "split.messenger_share": ("in", (0.60, 0.70), "messenger share of evidence fragments"),
    "replies.contradicting": ("==", 0, "replies that contradict the message they answer"),
}


class RealismInputError(ValueError):
    """The folder is not a persona set (no persona folder with a ``persona.json`` or ``facts.json``)."""


@dataclass(frozen=True)
class Finding:
    """One problem, located: the persona, the file, the record (ids as the file spells them) and field."""

    check: str
    persona: str
    file: str
    record: str
    field: str
    message: str
    severity: Severity = "violation"
    rule: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "check": self.check,
            "severity": self.severity,
            "rule": self.rule,
            "persona": self.persona,
            "file": self.file,
            "record": self.record,
            "field": self.field,
            "message": self.message,
        }

    def where(self) -> str:
        return f"{self.persona}/{self.file} {self.record} [{self.field}]"


@dataclass
class RealismReport:
    """The audit of one set: figures per criterion, the targets they meet or miss, and the findings."""

    path: str
    personas: list[str]
    figures: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def targets(self) -> list[dict[str, Any]]:
        """Each of `TARGETS` with the measured value and whether it is met (None: nothing to measure)."""
        out = []
        for key, (op, bound, what) in TARGETS.items():
            group, name = key.split(".", 1)
            value = self.figures.get(group, {}).get(name)
            if isinstance(bound, tuple):
                low, high = bound
                met = None if value is None else low <= value <= high
                target = f"{low:g}-{high:g}"
            else:
                met = None if value is None else {"<=": value <= bound, ">=": value >= bound}.get(op, value == bound)
                target = f"{op} {bound:g}"
            out.append({"figure": key, "what": what, "value": value, "target": target, "met": met})
        return out

    def counts(self) -> dict[str, dict[str, int]]:
        """Findings per check and severity."""
        out: dict[str, Counter[str]] = defaultdict(Counter)
        for f in self.findings:
            out[f.check][f.severity] += 1
        return {k: dict(v) for k, v in sorted(out.items())}

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data: path, personas, targets, figures, finding counts and findings."""
        return {
            "path": self.path,
            "personas": list(self.personas),
            "targets": self.targets(),
            "figures": self.figures,
            "finding_counts": self.counts(),
            "findings": [f.as_dict() for f in self.findings],
        }

    def markdown(self, examples: int = 5) -> str:
        """A short Markdown page: targets, the case table, and up to ``examples`` findings per check."""
        lines = [f"# Realism audit: {self.path}", "", f"{len(self.personas)} personas.", ""]
        lines += ["| figure | value | target | met |", "|---|---|---|---|"]
        for t in self.targets():
            met = {True: "yes", False: "**no**", None: "n/a"}[t["met"]]
            lines.append(f"| {t['what']} | {_fmt(t['value'])} | {t['target']} | {met} |")
        sf = self.figures.get("shared_facts", {})
        if sf.get("in_every_persona_count"):
            shown = "; ".join(sf["in_every_persona"][:8])
            more = " ..." if sf["in_every_persona_count"] > 8 else ""
            lines += ["", f"Facts in every persona ({sf['in_every_persona_count']}): {shown}{more}"]
        con = self.figures.get("constraints", {})
        lines += [
            "",
            f"Constraint findings: {con.get('violations', 0)} violations, "
            f"{con.get('suspicious', 0)} suspicious, in {con.get('personas_with_violations', 0)} personas.",
        ]
        md = self.figures.get("message_dates", {})
        if md:
            by = ", ".join(f"{k} {v}" for k, v in md.get("by_dimension", {}).items())
            lines += [
                f"Message dates: {md.get('contradicting', 0)} contradicting ({by}); "
                f"time of day: {md.get('time_of_day', 0)}."
            ]
        fil = self.figures.get("filler", {})
        if fil.get("top_repeated"):
            top = ", ".join(f"{t!r} x{n}" for t, n in fil["top_repeated"][:5])
            lines.append(f"Most repeated filler: {top}.")
        cases = self.figures.get("cases", {}).get("by_type", {})
        if cases:
            lines += ["", "| type | cases | facts/case | facts per case | sources |", "|---|---|---|---|---|"]
            for t, c in cases.items():
                dist = ", ".join(f"{k}: {v}" for k, v in c["facts_per_case"].items())
                src = ", ".join(f"{k} {v}" for k, v in c["sources"].items() if v)
                lines.append(f"| {t} | {c['count']} | {_fmt(c['facts_per_case_mean'])} | {dist} | {src} |")
        by_check: dict[str, list[Finding]] = defaultdict(list)
        for f in self.findings:
            by_check[f.check].append(f)
        if by_check:
            lines += ["", "## Findings"]
        for check, items in sorted(by_check.items()):
            lines += ["", f"### {check} ({len(items)})", ""]
            ordered = sorted(items, key=lambda f: (f.severity != "violation", f.persona))
            lines += [f"- {f.severity}: {f.where()}: {f.message}" for f in ordered[:examples]]
            if len(items) > examples:
                lines.append(f"- ... {len(items) - examples} more")
        return "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


# -- reading ---------------------------------------------------------------------------------------
@dataclass
class _Persona:
    """What the audit reads of one persona folder; records are the parsed JSON objects."""

    id: str
    folder: Path
    seed: dict[str, Any] = field(default_factory=dict)
    facts: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)


def _read_json(path: Path, persona: str, problems: list[Finding]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        problems.append(Finding("input", persona, path.name, "-", "-", "file missing", "info"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(Finding("input", persona, path.name, "-", "-", f"not readable JSON: {exc}", "violation"))
    return None


def _read_jsonl(path: Path, persona: str, problems: list[Finding]) -> list[dict[str, Any]]:
    if not path.exists():
        problems.append(Finding("input", persona, path.name, "-", "-", "file missing", "info"))
        return []
    out = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Finding("input", persona, path.name, "-", "-", f"not readable: {exc}", "violation"))
        return []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Finding("input", persona, path.name, f"line {n}", "-", f"not JSON: {exc}", "violation"))
            continue
        if not isinstance(obj, dict):
            problems.append(Finding("input", persona, path.name, f"line {n}", "-", "not a JSON object", "violation"))
            continue
        out.append(obj)
    return out


def _parse_date(value: Any) -> date | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def _parse_dt(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    return dt.replace(tzinfo=None)


def _persona_folders(root: Path) -> list[Path]:
    if (root / "persona.json").is_file() or (root / "facts.json").is_file():
        return [root]
    return sorted(
        p for p in root.iterdir() if p.is_dir() and ((p / "persona.json").is_file() or (p / "facts.json").is_file())
    )


def _load(folder: Path, set_seeds: dict[str, dict[str, Any]], problems: list[Finding]) -> _Persona:
    pid = folder.name
    meta = _read_json(folder / "persona.json", pid, problems)
    meta = meta if isinstance(meta, dict) else {}
    pid = str(meta.get("id") or pid)
    seed = meta.get("seed")
    p = _Persona(pid, folder, seed if isinstance(seed, dict) else set_seeds.get(pid, {}))
    facts = _read_json(folder / "facts.json", pid, problems)
    if isinstance(facts, dict):
        facts = facts.get("facts")
    if facts is not None and not isinstance(facts, list):
        problems.append(Finding("input", pid, "facts.json", "-", "facts", "not a list of facts", "violation"))
    p.facts = [f for f in facts if isinstance(f, dict)] if isinstance(facts, list) else []
    p.messages = _read_jsonl(folder / "messenger.jsonl", pid, problems)
    p.events = _read_jsonl(folder / "calendar.jsonl", pid, problems)
    p.clusters = _read_jsonl(folder / "clusters.jsonl", pid, problems)
    p.cases = _read_jsonl(folder / "cases.jsonl", pid, problems)
    return p


def _set_seeds(root: Path) -> dict[str, dict[str, Any]]:
    path = root / "seeds.jsonl"
    out: dict[str, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and obj.get("id"):
                out[str(obj["id"])] = obj
    return out


# -- text helpers ----------------------------------------------------------------------------------
_WS = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^0-9a-z$%' ]+")


def _norm(text: str) -> str:
    """Lower case, accents and curly quotes folded, punctuation to spaces, single spaces."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _WS.sub(" ", _NON_WORD.sub(" ", text.lower())).strip()


_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen twenty thirty "
    "forty fifty hundred thousand"
).split()
_MASK = re.compile(r"\b(?:\d[\d,.]*|" + "|".join(_NUMBER_WORDS) + r")\b")


def _template(text: str) -> str:
    """The fact with its parameters masked: numbers, number words and capitalised words after the first."""
    words = [w if i == 0 or not w[:1].isupper() else "qqname" for i, w in enumerate(text.split())]
    return _MASK.sub("#", _norm(" ".join(words)))


def _line_key(text: str) -> str:
    """A filler line as a reader compares it: case, spacing and trailing punctuation ignored."""
    return _WS.sub(" ", text.casefold()).strip().rstrip(".!?~ ")


def _label(f: dict[str, Any]) -> str:
    return str(f.get("label") or f.get("value") or "")


# -- 1. shared facts -------------------------------------------------------------------------------
def _shared_facts(personas: list[_Persona], findings: list[Finding]) -> dict[str, Any]:
    """Facts shared between personas (by normalised label) and facts listed twice in one persona."""
    exact: dict[str, set[str]] = {}
    shown: dict[str, str] = {}
    masked: dict[str, set[str]] = {}
    first_id: dict[tuple[str, str], str] = {}
    duplicates = 0
    for p in personas:
        seen: dict[str, str] = {}
        for f in p.facts:
            key = _norm(_label(f))
            if not key:
                continue
            fid = str(f.get("id", "?"))
            if key in seen:
                duplicates += 1
                findings.append(
                    Finding(
                        "duplicate_fact",
                        p.id,
                        "facts.json",
                        f"{seen[key]},{fid}",
                        "label",
                        f"the fact {_label(f)!r} is listed twice",
                        "violation",
                    )
                )
            seen.setdefault(key, fid)
            first_id.setdefault((p.id, key), fid)
            shown.setdefault(key, _label(f))
        exact[p.id] = set(seen)
        masked[p.id] = {_template(_label(f)) for f in p.facts if _label(f)}
    out: dict[str, Any] = {"personas": len(personas), "duplicates_within_persona": duplicates}
    pairs = [(a, b) for a in exact for b in exact if a != b and exact[a]]
    if not pairs:
        return out | {"mean_pairwise": None, "in_every_persona_count": 0, "in_every_persona": []}

    def shares(sets: dict[str, set[str]]) -> dict[tuple[str, str], float]:
        return {(a, b): len(sets[a] & sets[b]) / len(sets[a]) for a, b in pairs if sets[a]}

    ex, tm = shares(exact), shares(masked)
    worst = max(ex, key=lambda k: ex[k])
    anywhere = [
        sum(1 for k in exact[a] if any(k in exact[b] for b in exact if b != a)) / len(exact[a])
        for a in exact
        if exact[a]
    ]
    every = set.intersection(*exact.values()) if exact else set()
    keys = sorted(every)
    labels = [shown[k] for k in keys]
    first = personas[0].id
    for key in keys:
        findings.append(
            Finding(
                "shared_facts",
                first,
                "facts.json",
                first_id.get((first, key), "?"),
                "label",
                f"{shown[key]!r} is a fact of all {len(personas)} personas",
                "suspicious",
            )
        )
    for a in exact:
        others = {b: ex[(a, b)] for b in exact if (a, b) in ex}
        if not others:
            continue
        b = max(others, key=lambda k: others[k])
        if others[b] > _SHARED_LIMIT:
            n = len(exact[a] & exact[b])
            findings.append(
                Finding(
                    "shared_facts",
                    a,
                    "facts.json",
                    b,
                    "label",
                    f"{n} of {len(exact[a])} facts ({others[b]:.0%}) also facts of {b}",
                    "violation",
                )
            )
    return out | {
        "mean_pairwise": round(statistics.fmean(ex.values()), 4),
        "min_pairwise": round(min(ex.values()), 4),
        "max_pairwise": round(ex[worst], 4),
        "max_pair": list(worst),
        "share_in_another": round(statistics.fmean(anywhere), 4),
        "template_mean_pairwise": round(statistics.fmean(tm.values()), 4),
        "in_every_persona_count": len(labels),
        "in_every_persona": labels,
    }


# -- 2. constraints --------------------------------------------------------------------------------
#: fact classes: name -> regular expression searched in the normalised fact label. Written from what
#: a life can and cannot hold, not from the generator's bank; a class may match many phrasings.
FACT_CLASSES: dict[str, str | tuple[str, ...]] = {
    # diet families: religious, pattern, medical
    "diet_halal": r"\bhalal\b|\bzabiha\b",
    "diet_kosher": r"\bkosher\b",
    "diet_vegan": r"\bvegan\b|\bplant based\b",
    "diet_vegetarian": r"\bvegetarian\b",
    "diet_pescatarian": r"\bpescatarian\b",
    "diet_keto": r"\bketo(?:genic)?\b|\blow carb\b|\bcarnivore diet\b",
    "diet_paleo": r"\bpaleo\b|\bwhole ?30\b",
    "diet_gluten_free": r"\bceliac\b|\bcoeliac\b|\bgluten free\b",
    "meat_lover": (
        r"\b(?:smok|grill|barbecu)\w* (?:\w+ ){0,2}meat\b",
        r"\bbrisket\b",
        r"\bbbq\b",
        r"\bhunts? deer\b",
        r"\bbutchers? (?:his|her|their) own\b",
    ),
    "drinks_alcohol": r"\bwine\b|\bbeer\b|\bwhiske?y\b|\bbourbon\b|\bcocktails?\b|\bhome ?brew",
    "no_alcohol": r"\bdoes not drink\b|\bdoesn't drink\b|\bnever drinks\b|\bsober\b|\bin recovery\b|\bteetotal",
    "heavy_caffeine": r"\b(?:a lot of|lots of|a ton of|endless) coffee\b|\bcoffee addict\b|\bcups of coffee a day\b",
    "no_caffeine": r"\bquit (?:caffeine|coffee)\b|\b(?:caffeine|coffee) free\b|\bno caffeine\b|\bonly decaf\b",
    "smoker": (
        r"\bsmokes\b(?! (?:\w+ ){0,2}(?:meat|pork|brisket|ribs|fish|salmon|turkey|chicken|sausage|shoulder|cheese))",
        r"\bsmoker\b(?! (?:grill|box))|\bpacks? a day\b|\bvapes\b",
    ),
    "quit_smoking": r"\bquit smoking\b|\bstopped smoking\b|\bex smoker\b|\bformer smoker\b",
    # childhood origins
    "origin_military_kid": (
        r"\bmilitary (?:kid|brat|family)\b",
        r"\bgrew up on (?:army |military |air force |navy )?bases\b",
    ),
    "origin_foster": r"\bfoster (?:care|kid|child|home)\b",
    "origin_farm": r"\b(?:grew up|raised) on a (?:farm|ranch)\b|\bfarm kid\b",
    "origin_small_town": r"\bgrew up in a small town\b|\bsmall town (?:kid|upbringing)\b",
    "origin_city": r"\bgrew up in (?:the|a big|a) city\b|\bcity kid\b",
    "origin_immigrant_adult": r"\bimmigrated\b.*\bas an adult\b|\bcame to the (?:u s|us|united states) as an adult\b",
    # work
    "retired": r"\bis retired\b|\bretired (?:from|after|early|last)\b|\bretiree\b|^retired\b",
    "job": (
        r"\bworks? (?:\w+ ){0,3}shifts?\b",
        r"\bswitched to (?:day|night) shifts\b",
        r"\bworks from home\b",
        r"\bcommut\w*\b",
        r"\bpromoted\b",
        r"\bjob offer\b",
        r"\bdirect reports\b",
        r"\b(?:to|before|after|at) work\b",
        r"\bteaches (?:\w+ )?school\b",
        r"\bworks (?:as|at|for|in) a?\b",
        r"\bcoworkers\b",
        r"\bday job\b",
    ),
    "job_search": r"\blooking for (?:a )?(?:new )?job\b|\bjob hunting\b|\bjob search\b",
    "unemployed": r"\blaid off\b|\bunemployed\b|\bbetween jobs\b|\blost (?:a|his|her|their|the) job\b|\bout of work\b",
    "training_nursing": r"\bnursing school\b|\bnursing program\b",
    "training_trade": r"\bapprentice(?:ship)?\b|\btrade school\b",
    "training_medicine": r"\bmedical school\b|\bmed school\b|\bmedical residency\b",
    "training_police": r"\bpolice academy\b",
    "teen_life": r"\bin high school\b|\bhigh school (?:student|senior|junior)\b|\bprom\b|\blearner's permit\b",
    # family and life stage
    "young_children": r"\bnewborn\b|\binfants?\b|\btoddlers?\b|\byoung (?:children|kids)\b|\bbaby (?:boy|girl)\b",
    "expecting": r"\bexpecting\b|\bpregnan\w*\b",
    "teen_children": (
        r"\bparent of (?:two |three )?teen",
        r"\bteenage (?:son|daughter|kids|children)\b",
        r"\bteenagers at home\b",
    ),
    "stepchildren": (
        r"(?<!through a )(?<!through her )(?<!through his )\bstep ?(?:children|kids|son|daughter)\b",
        r"\bblended family\b",
    ),
    "empty_nester": r"\bempty nest",
    "new_empty_nester": r"\b(?:just|recently) became an empty nester\b|\bnew empty nester\b|\bnewly empty nest",
    "grandchildren": r"\bgrand(?:children|kids?|son|daughter|baby)\b",
    "aging_parent": (
        r"\baging (?:parent|mother|father|mom|dad)\b",
        r"\belderly (?:parent|mother|father|mom|dad)\b",
        r"\bassisted living\b",
        r"\bparents? (?:living|lives|live) (?:overseas|abroad)\b",
        r"\bcares? for (?:an? |her |his |their )?(?:mother|father|mom|dad)\b",
    ),
    "married_years": r"\bmarried (?:for )?(?:over |more than |nearly |almost )?(?P<n>\d+)\b",
    "engaged": r"\bengaged\b|\bplanning a wedding\b|\bfianc",
    "newlywed": r"\bgot married\b|\bnewlywed\b|\bjust married\b",
    "single_dating": (  # single as a relationship status, not "a single bag" or "a single-wide"
        r"(?:^|\b(?:is|stays?|still|been|being|happily|newly|now|and) )single\b(?! (?:parent|mom|dad|mother|father))",
        r"\bsingle (?:again|and dating|life)\b|\bdating apps?\b|\bdating through\b",
    ),
    "divorced": r"\bdivorc",
    "widowed": r"\blost (?:a|her|his|their) (?:spouse|husband|wife|partner)\b|\bwidow",
    # schedule and body
    "early_bed": r"\b(?:7|8|9) ?p ?m bedtime\b|\bin bed by (?:7|8|9)\b",
    "early_riser": r"\bwakes? up at (?:3|4|5) ?a ?m\b|\bwakes? (?:up )?before dawn\b",
    "night_owl": r"\bstays? up (?:past|until|till) (?:1|2|3) ?a ?m\b|\bnight owl\b",
    "night_shift": r"\bnight shifts?\b|\bworks nights\b|\bgraveyard shift\b",
    "sedentary": r"\brarely exercises\b|\bnever exercises\b|\bsedentary\b|\bcouch potato\b",
    "very_active": (
        r"\bcrossfit\b",
        r"\bmarathon\b",
        r"\bswims laps\b",
        r"\bworks out every day\b",
        r"\b10 ?000 steps\b",
        r"\bthree times a week\b",
        r"\bfive days a week\b",
        r"\bpickup basketball\b",
        r"\brock climbing\b",
        r"\bbouldering\b",
        r"\brunning program\b",
    ),
    "strenuous_sport": (
        r"\bmarathon\b",
        r"\bpickup basketball\b",
        r"\bcrossfit\b",
        r"\brock climbing\b",
        r"\bbouldering\b",
    ),
    "on_foot_sport": (
        r"\brunning\b(?! (?:a|an|the|his|her|their) )|\bmarathon\b|\b5k\b|\bbasketball\b|\bclimbing\b|\bbouldering\b",
        r"\b10 ?000 steps\b",
    ),
    "knee_recovery": r"\brecovering from (?:knee|hip|ankle|back) surgery\b|\btorn (?:acl|meniscus)\b",
    "wheelchair": r"\bwheelchair\b",
    # home and getting around
    "renter": (
        r"\brents? an? (?:apartment|house|room)\b|\brenter\b|\btenant\b",
        r"\b(?:moving|moved) (?:in)?to a new apartment\b|\bsettled into the new apartment\b",
    ),
    "house_hunting": r"\bsaving for a (?:house )?down payment\b|\bsaving (?:up )?(?:to buy|for) a (?:house|home)\b",
    "owner": (
        r"\bbought a (?:house|home|condo)\b",
        r"\bowns? (?:a|the|their|his|her) (?:house|home)\b",
        r"\bhomeowner\b",
        r"\brents out\b",
        r"\brenovating (?:an|the|our|my|his|her|their) (?:old )?house\b",
    ),
    "rural": r"\blives? (?:out )?in the country\b|\blives? on a (?:farm|ranch)\b|\brural\b",
    "urban_walker": r"\bwalks everywhere in the city\b|\blives? downtown\b",
    "no_car": r"\b(?:does not|doesn't) own a car\b|\bno car\b|\bcar free\b|\bsold (?:the|his|her|their) car\b",
    "no_license": (
        r"\blost (?:a|his|her|their|the) driver's license\b|\bcan't drive\b(?! (?:after dark|at night|on highways))",
        r"\bsuspended license\b",
    ),
    "owns_vehicle": r"\bpickup\b(?! (?:basketball|game))|\belectric car\b|\bmotorcycle\b|\bdrives an?\b",
    "drives": (
        r"\bdrives (?:a|an|the|his|her|their|for|to|everywhere)\b|\bdriving (?:a|an|the|his|her|their|for|to)\b",
        r"\brides a motorcycle\b|\bcommutes by car\b",
    ),
    "no_fly": r"\brefuses to fly\b|\bwon't fly\b|\bafraid of flying\b|\bnever flies\b|\bfear of flying\b",
    "overseas_trip": (
        r"\btrip to (?:japan|europe|asia|africa|australia|hawaii|india|china|korea|vietnam)\b",
        r"\btrip to (?:italy|france|spain|greece|ireland|london|paris|rome)\b",
        r"\binternational flight\b",
    ),
    # money
    "card_debt": r"\bcredit card debt\b|\bpaying off credit cards?\b|\bmaxed out\b",
    "cards_paid": r"\bpaid off all (?:the|his|her|their)? ?credit cards\b|\bis debt free\b",
    "paycheck_to_paycheck": r"\bpaycheck to paycheck\b|\bcan't make rent\b",
    "wealth_building": (
        r"\baggressively saving\b",
        r"\bearly retirement\b",
        r"\binvests? in index funds\b",
        r"\bmaxes out (?:a |the |his |her )?401",
    ),
    # views and temperament
    "gun_rights": r"\bgun rights\b|\bsecond amendment\b",
    "gun_control": r"\bstricter gun laws\b|\bgun control\b|\bgun safety laws\b|\bbackground checks?\b",
    "climate_pro": r"\b(?:stronger|more) climate (?:policy|action)\b|\bclimate activis",
    "climate_anti": r"\bopposes? (?:new )?climate (?:regulations?|policy|rules)\b|\bclimate (?:change )?skeptic",
    "immigrant_rights": r"\bimmigrant rights\b",
    "immigration_strict": r"\bstricter immigration\b|\bimmigration enforcement\b",
    "apolitical": r"\bavoids politics\b|\bapolitical\b|\bnot political\b|\bnever votes\b",
    "activist": r"\brunning for\b|\badvocat\w*\b|\bvoter registration\b|\bcampaigns? for\b|\bclimate march",
    "planner": r"\bplans everything\b|\bmeticulous planner\b|\bplans (?:\w+ ){0,2}weeks ahead\b",
    "spontaneous": r"\blast minute plans\b|\bon a whim\b|\bspontaneous\b",
    "optimist": r"\bupbeat no matter\b|\balways optimistic\b|\bglass half full\b",
    "pessimist": r"\bexpects? the worst\b|\bpessimis",
    # education
    "wants_bachelor": r"\b(?:finish|get|earn|complete) (?:a|my|her|his|their) bachelor",
    "college_grad": r"\bgraduate from college\b|\bgraduated from college\b|\bcollege graduate\b|\bcollege degree\b",
    "ged": r"\bged\b",
    "graduate_study": r"\bmaster's degree\b|\bmba\b|\bphd\b|\bdoctorate\b|\bgrad school\b",
    # what a fact says the persona does for a living, against the seed's occupation
    "teaches_school": r"\bteaches (?:\w+ )?(?:elementary|middle|high) school\b|\bteaches (?:\w+ )?grade\b",
    "teaches_lower_school": r"\bteaches (?:\w+ )?(?:elementary|middle) school\b|\bteaches (?:\w+ )?grade\b",
}
_CLASS_RES = {name: re.compile(rx if isinstance(rx, str) else "|".join(rx)) for name, rx in FACT_CLASSES.items()}


@dataclass(frozen=True)
class Rule:
    """One declared constraint. ``kind``:

    - ``pair``: no fact of ``classes[0]`` may hold on a day when a fact of ``classes[1]`` holds;
    - ``group``: at most ``max_present`` of ``classes`` may hold on one day;
    - ``age``: a fact of ``classes[0]`` needs the seed's age within ``min_age``..``max_age``; with
      ``years_offset`` the minimum is the number the fact states plus the offset (married 25 years: 43);
    - ``education``: a fact of ``classes[0]`` needs the seed's education level within ``min_edu``..
      ``max_edu`` (0 less than high school, 1 high school, 2 some college, 3 associate, 4 bachelor's,
      5 graduate);
    - ``seed``: the seed's ``seed_field`` matches ``seed_pattern`` and a fact of any of ``classes`` holds,
      or, with ``other_field``, the seed's ``other_field`` matches ``other_pattern``.
    """

    id: str
    kind: Literal["pair", "group", "age", "education", "seed"]
    severity: Literal["violation", "suspicious"]
    why: str
    classes: tuple[str, ...] = ()
    max_present: int = 1
    min_age: int | None = None
    max_age: int | None = None
    years_offset: int | None = None
    min_edu: int | None = None
    max_edu: int | None = None
    seed_field: str = ""
    seed_pattern: str = ""
    other_field: str = ""
    other_pattern: str = ""


_V: Literal["violation"] = "violation"
_S: Literal["suspicious"] = "suspicious"
_RELIGIOUS = ("diet_halal", "diet_kosher")
_PATTERN = ("diet_vegan", "diet_vegetarian", "diet_pescatarian", "diet_keto", "diet_paleo")
_ORIGINS = ("origin_military_kid", "origin_foster", "origin_farm", "origin_immigrant_adult", "origin_city")
_TRAININGS = ("training_nursing", "training_trade", "training_medicine", "training_police")
_NOT_WORKING = r"\bretired\b|not in (?:the )?labou?r force|\bunemployed\b|\bnot working\b"
_WORKING = r"^(?!.*(?:" + _NOT_WORKING + r")).+"

#: (id, severity, class, class, why): the two may not hold on the same day
_PAIRS: tuple[tuple[str, Literal["violation", "suspicious"], str, str, str], ...] = (
    ("diet.vegan_meat", _V, "diet_vegan", "meat_lover", "vegan but loves meat"),
    ("diet.vegetarian_meat", _V, "diet_vegetarian", "meat_lover", "vegetarian but loves meat"),
    ("diet.pescatarian_meat", _V, "diet_pescatarian", "meat_lover", "pescatarian but loves meat"),
    ("diet.sober_drinks", _V, "no_alcohol", "drinks_alcohol", "does not drink but drinks"),
    ("diet.halal_alcohol", _S, "diet_halal", "drinks_alcohol", "keeps halal but enjoys alcohol"),
    ("diet.caffeine", _V, "heavy_caffeine", "no_caffeine", "heavy coffee drinker and caffeine-free at once"),
    ("health.smoking", _V, "smoker", "quit_smoking", "smokes and has quit at once"),
    ("origin.military_farm", _V, "origin_military_kid", "origin_farm", "moved as a military kid, grew up on a farm"),
    (
        "origin.military_town",
        _V,
        "origin_military_kid",
        "origin_small_town",
        "military kid yet from one small town",
    ),
    ("origin.city_farm", _V, "origin_city", "origin_farm", "grew up in a city and on a farm"),
    (
        "origin.military_foster",
        _S,
        "origin_military_kid",
        "origin_foster",
        "military kid and foster child",
    ),
    (
        "origin.immigrant_military",
        _S,
        "origin_immigrant_adult",
        "origin_military_kid",
        "grew up abroad, military kid",
    ),
    ("origin.immigrant_foster", _S, "origin_immigrant_adult", "origin_foster", "grew up abroad, in foster care"),
    ("work.retired_job", _V, "retired", "job", "retired but holds a job"),
    ("work.retired_search", _S, "retired", "job_search", "retired but job hunting"),
    ("work.unemployed_job", _V, "unemployed", "job", "out of work but holds a job"),
    ("family.empty_nest_young_children", _V, "empty_nester", "young_children", "an empty nester with little children"),
    ("family.empty_nest_expecting", _V, "empty_nester", "expecting", "an empty nester expecting a baby"),
    ("family.empty_nest_teens", _V, "empty_nester", "teen_children", "an empty nester with teenagers"),
    ("family.empty_nest_stepchildren", _V, "empty_nester", "stepchildren", "an empty nester raising stepchildren"),
    ("family.married_engaged", _V, "married_years", "engaged", "long married yet engaged"),
    ("family.married_newlywed", _V, "married_years", "newlywed", "long married yet just married"),
    ("family.married_single", _V, "married_years", "single_dating", "long married yet single and dating"),
    ("family.married_divorced", _V, "married_years", "divorced", "long married yet divorced"),
    ("family.married_widowed", _V, "married_years", "widowed", "long married yet widowed"),
    ("family.engaged_single", _V, "engaged", "single_dating", "engaged and single at once"),
    ("family.newlywed_single", _V, "newlywed", "single_dating", "just married and single at once"),
    ("family.divorced_widowed", _S, "divorced", "widowed", "recently divorced and lost a spouse a few years ago"),
    ("schedule.owl_early_bed", _V, "night_owl", "early_bed", "up past 1 a.m. but in bed by 9"),
    ("schedule.owl_early_riser", _V, "night_owl", "early_riser", "up past 1 a.m. and up at 5 a.m. every day"),
    ("schedule.night_shift_early_bed", _V, "night_shift", "early_bed", "works nights with an early bedtime"),
    ("body.sedentary_active", _V, "sedentary", "very_active", "rarely exercises yet trains hard"),
    ("body.knee_sport", _V, "knee_recovery", "strenuous_sport", "recovering from surgery, playing a hard sport"),
    ("body.wheelchair_sport", _S, "wheelchair", "on_foot_sport", "uses a wheelchair and plays a sport on foot"),
    ("home.rent_own", _S, "renter", "owner", "rents an apartment and owns a home at once"),
    ("home.own_saving_for_one", _S, "owner", "house_hunting", "owns a home yet saves for a first down payment"),
    ("home.rural_urban", _V, "rural", "urban_walker", "lives in the country and walks everywhere in the city"),
    ("travel.no_car_vehicle", _V, "no_car", "owns_vehicle", "owns no car but owns a vehicle"),
    ("travel.no_license_drives", _V, "no_license", "drives", "has no driver's license but drives"),
    ("travel.no_fly_overseas", _V, "no_fly", "overseas_trip", "refuses to fly but plans an overseas trip"),
    ("money.cards", _V, "card_debt", "cards_paid", "in credit card debt and paid off every card at once"),
    ("money.paycheck_wealth", _S, "paycheck_to_paycheck", "wealth_building", "paycheck to paycheck, building wealth"),
    ("views.guns", _V, "gun_rights", "gun_control", "gun-rights supporter who wants stricter gun laws"),
    ("views.climate", _V, "climate_pro", "climate_anti", "for and against climate policy"),
    (
        "views.immigration",
        _V,
        "immigrant_rights",
        "immigration_strict",
        "for immigrants' rights and stricter enforcement",
    ),
    ("views.apolitical_activist", _V, "apolitical", "activist", "avoids politics yet campaigns"),
    ("temperament.planning", _V, "planner", "spontaneous", "plans everything yet acts on a whim"),
    ("temperament.outlook", _V, "optimist", "pessimist", "upbeat no matter what yet expects the worst"),
)
#: (id, severity, at most, classes, why): no more of the classes than that may hold on one day
_GROUPS: tuple[tuple[str, Literal["violation", "suspicious"], int, tuple[str, ...], str], ...] = (
    ("diet.religious", _V, 1, _RELIGIOUS, "more than one religious diet"),
    ("diet.pattern", _V, 1, _PATTERN, "more than one eating pattern"),
    ("diet.families", _V, 2, (*_RELIGIOUS, *_PATTERN, "diet_gluten_free"), "more than two diet families at once"),
    ("origin.stories", _V, 2, _ORIGINS, "more than two childhood origin stories"),
    ("training.one_at_a_time", _V, 1, _TRAININGS, "in two career trainings at once"),
)
#: (id, severity, class, youngest, oldest, why); a youngest of -18 means "the number the fact states + 18"
_AGES: tuple[tuple[str, Literal["violation", "suspicious"], str, int | None, int | None, str], ...] = (
    ("age.retired_young", _V, "retired", 50, None, "retired before 50"),
    ("age.nursing_old", _V, "training_nursing", None, 64, "in nursing school at 65 or older"),
    ("age.trade_old", _V, "training_trade", None, 64, "an apprentice at 65 or older"),
    ("age.new_empty_nest_late", _S, "new_empty_nester", None, 69, "just became an empty nester at 70 or older"),
    ("age.new_empty_nest_old", _V, "new_empty_nester", None, 74, "just became an empty nester at 75 or older"),
    ("age.teen_life_old", _V, "teen_life", None, 29, "a teenager's life at 30 or older"),
    ("age.young_children_old", _V, "young_children", None, 59, "an infant or toddler at home at 60 or older"),
    ("age.expecting_old", _V, "expecting", None, 59, "expecting a baby at 60 or older"),
    ("age.expecting_late", _S, "expecting", 0, 49, "expecting a baby at 50 or older"),
    ("age.teens_old", _V, "teen_children", None, 74, "teenage children at 75 or older"),
    ("age.teens_young", _V, "teen_children", 28, None, "teenage children before 28"),
    ("age.grandchildren_young", _V, "grandchildren", 35, None, "grandchildren before 35"),
    ("age.empty_nest_young", _V, "empty_nester", 35, None, "an empty nester before 35"),
    ("age.aging_parent_old", _S, "aging_parent", None, 74, "a living parent to care for at 75 or older"),
    ("age.aging_parent_very_old", _V, "aging_parent", None, 84, "a living parent to care for at 85 or older"),
    ("age.stepchildren_old", _S, "stepchildren", None, 74, "raising stepchildren at 75 or older"),
    ("age.married_years", _V, "married_years", -18, None, "married for longer than an adult life allows"),
    ("age.hard_sport_old", _S, "strenuous_sport", None, 74, "a strenuous sport at 75 or older"),
)
#: (id, severity, class, lowest level, highest level, why) against the seed's education
_EDUCATION: tuple[tuple[str, Literal["violation", "suspicious"], str, int | None, int | None, str], ...] = (
    ("education.bachelor_goal", _V, "wants_bachelor", None, 3, "wants a bachelor's degree the seed already holds"),
    ("education.college_grad", _V, "college_grad", 3, None, "a college graduate whose seed has no college degree"),
    ("education.ged", _V, "ged", None, 0, "studying for the GED with a diploma or more"),
    ("education.nursing", _V, "training_nursing", 1, None, "in nursing school without a high-school diploma"),
    ("education.bachelor_no_diploma", _V, "wants_bachelor", 1, None, "finishing a bachelor's without a diploma"),
    ("education.graduate_study", _V, "graduate_study", 4, None, "graduate study without a bachelor's degree"),
)
#: (id, severity, seed field, pattern, classes, why): a seed like that may not hold a fact of the classes
_SEED_FACTS: tuple[tuple[str, Literal["violation", "suspicious"], str, str, tuple[str, ...], str], ...] = (
    (
        "work.seed_not_working",
        _V,
        "occupation",
        _NOT_WORKING,
        ("job",),
        "seed not working, a fact holds a job",
    ),
    ("work.seed_working_retired", _V, "occupation", _WORKING, ("retired",), "the seed works but a fact says retired"),
    (
        "household.married_single",
        _V,
        "household",
        r"\bmarried\b",
        ("single_dating", "engaged", "divorced"),
        "married seed single, engaged or divorced",
    ),
    (
        "work.teaches_not_teacher",
        _V,
        "occupation",
        r"^(?!.*(?:teach|tutor|educat|professor|instructor)).+",
        ("teaches_school",),
        "teaches school, a seed of another occupation",
    ),
    (
        "work.teacher_level",
        _V,
        "occupation",
        r"\bhigh school teacher\b",
        ("teaches_lower_school",),
        "a high-school teacher who teaches a lower school",
    ),
    ("household.partner_single", _V, "household", r"\bpartner\b", ("single_dating",), "living with a partner, single"),
    (
        "household.kids_empty_nest",
        _V,
        "household",
        r"(?<!no )children at home|single parent",
        ("empty_nester",),
        "children at home, an empty nester",
    ),
    (
        "household.no_kids",
        _V,
        "household",
        r"no children at home|living alone|roommates",
        ("young_children", "teen_children", "stepchildren"),
        "no children at home, raising children",
    ),
    (
        "household.single_parent",
        _V,
        "household",
        r"single parent",
        ("married_years",),
        "a single parent, married",
    ),
    (
        "household.alone_married",
        _S,
        "household",
        r"living alone",
        ("married_years", "newlywed"),
        "living alone, married",
    ),
)
#: (id, severity, seed field, pattern, other seed field, pattern, why): two seed fields that do not go together
_SEED_SEED: tuple[tuple[str, Literal["violation", "suspicious"], str, str, str, str, str], ...] = (
    (
        "work.seed_retired_goal",
        _V,
        "occupation",
        _NOT_WORKING,
        "goals",
        r"\bretire\b|\bpromotion\b|\braise\b",
        "seed out of work, working-life goal",
    ),
    (
        "education.seed_degree_job",
        _S,
        "occupation",
        r"\bengineer\b|\blawyer\b|\battorney\b|\bphysician\b|\bpharmacist\b"
        r"|\barchitect\b|\bteacher\b|\baccountant\b",
        "education",
        r"high school|some college|associate",
        "an occupation that needs a degree, without one",
    ),
    ("age.seed_retired_young", _V, "occupation", r"\bretired\b", "age", r"^[1-4]?[0-9]$", "retired before 50"),
)

#: the declared constraint model the audit enforces, independently of the sampler's
CONSTRAINT_RULES: tuple[Rule, ...] = (
    *(Rule(i, "pair", s, why, (a, b)) for i, s, a, b, why in _PAIRS),
    *(Rule(i, "group", s, why, cls, max_present=n) for i, s, n, cls, why in _GROUPS),
    *(
        Rule(
            i,
            "age",
            s,
            why,
            (c,),
            min_age=lo if lo is None or lo >= 0 else None,
            max_age=hi,
            years_offset=-lo if lo is not None and lo < 0 else None,
        )
        for i, s, c, lo, hi, why in _AGES
    ),
    *(Rule(i, "education", s, why, (c,), min_edu=lo, max_edu=hi) for i, s, c, lo, hi, why in _EDUCATION),
    *(Rule(i, "seed", s, why, cls, seed_field=f, seed_pattern=p) for i, s, f, p, cls, why in _SEED_FACTS),
    *(
        Rule(i, "seed", s, why, seed_field=f, seed_pattern=p, other_field=f2, other_pattern=p2)
        for i, s, f, p, f2, p2, why in _SEED_SEED
    ),
)


#: the seed's education as a level, most specific wording first
_EDUCATION_LEVELS = (
    (r"less than high school|no diploma|\bnone\b", 0),
    (r"graduate degree|master|doctor|\bphd\b|professional degree", 5),
    (r"bachelor", 4),
    (r"associate", 3),
    (r"some college", 2),
    (r"high school|\bged\b", 1),
)


def _education_level(text: str) -> int | None:
    t = text.lower()
    return next((level for rx, level in _EDUCATION_LEVELS if re.search(rx, t)), None)


@dataclass
class _ClassedFact:
    id: str
    label: str
    start: date | None
    end: date | None
    classes: dict[str, re.Match[str]]


def _classify(p: _Persona) -> list[_ClassedFact]:
    out = []
    for f in p.facts:
        label = _label(f)
        text = _norm(label)
        hits = {name: m for name, rx in _CLASS_RES.items() if (m := rx.search(text))}
        out.append(
            _ClassedFact(
                str(f.get("id", "?")), label, _parse_date(f.get("valid_from")), _parse_date(f.get("valid_to")), hits
            )
        )
    return out


def _overlap(a: _ClassedFact, b: _ClassedFact) -> bool:
    """Whether two facts hold on some common day (an open end holds for ever)."""
    if a.end is not None and b.start is not None and a.end <= b.start:
        return False
    return not (b.end is not None and a.start is not None and b.end <= a.start)


def _holds(f: _ClassedFact, day: date | None) -> bool:
    """Whether the fact holds on ``day`` (None: before any dated change, when undated facts hold)."""
    if day is None:
        return f.start is None
    return (f.start is None or f.start <= day) and (f.end is None or day < f.end)


def _seed_text(seed: dict[str, Any], key: str) -> str:
    value = seed.get(key, "")
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return "" if value is None else str(value)


def _constraints(p: _Persona, findings: list[Finding]) -> None:
    """Every rule of `CONSTRAINT_RULES` over one persona; a suspicious finding is dropped when a
    violation names the same facts (a 90-year-old's parent is a violation, not also a doubt)."""
    facts = _classify(p)
    found: list[Finding] = []
    age = p.seed.get("age") if isinstance(p.seed.get("age"), int) else None
    edu = _education_level(_seed_text(p.seed, "education")) if p.seed.get("education") else None
    by_class: dict[str, list[_ClassedFact]] = defaultdict(list)
    for f in facts:
        for c in f.classes:
            by_class[c].append(f)

    def add(rule: Rule, items: list[_ClassedFact], extra: str = "", seed: str = "") -> None:
        """One finding: the facts (facts.json, their ids) or, with no facts, the seed (persona.json)."""
        record = ",".join(f.id for f in items) if items else str(p.seed.get("id") or p.id)
        quoted = " + ".join(f"{f.label!r}" for f in items)
        detail = "; ".join(x for x in (quoted, extra) if x)
        fld = ", ".join(x for x in ("label" if items else "", f"seed.{seed}" if seed else "") if x)
        file = "facts.json" if items else "persona.json"
        found.append(Finding("constraints", p.id, file, record, fld, f"{rule.why}: {detail}", rule.severity, rule.id))

    for rule in CONSTRAINT_RULES:
        if rule.kind == "pair":
            a_cls, b_cls = rule.classes
            seen: set[frozenset[str]] = set()
            for a in by_class.get(a_cls, []):
                for b in by_class.get(b_cls, []):
                    key = frozenset((a.id, b.id))
                    if a.id != b.id and key not in seen and _overlap(a, b):
                        seen.add(key)
                        add(rule, [a, b])
        elif rule.kind == "group":
            members = [(c, f) for c in rule.classes for f in by_class.get(c, [])]
            points = [None, *sorted({f.start for _, f in members if f.start is not None})]
            reported: set[frozenset[str]] = set()
            for t in points:
                active = [(c, f) for c, f in members if _holds(f, t)]
                kinds = {c for c, _ in active}
                ids = frozenset(f.id for _, f in active)
                if len(kinds) > rule.max_present and ids not in reported:
                    reported.add(ids)
                    items = list({f.id: f for _, f in active}.values())
                    add(rule, items, f"{len(kinds)} of at most {rule.max_present}: {', '.join(sorted(kinds))}")
        elif rule.kind == "age" and age is not None:
            for f in by_class.get(rule.classes[0], []):
                lo = rule.min_age
                if rule.years_offset is not None:
                    m = f.classes[rule.classes[0]]
                    n = m.groupdict().get("n")
                    lo = int(n) + rule.years_offset if n else None
                if (lo is not None and age < lo) or (rule.max_age is not None and age > rule.max_age):
                    add(rule, [f], f"age {age}", "age")
        elif rule.kind == "education" and edu is not None:
            for f in by_class.get(rule.classes[0], []):
                if (rule.min_edu is not None and edu < rule.min_edu) or (
                    rule.max_edu is not None and edu > rule.max_edu
                ):
                    add(rule, [f], f"education {_seed_text(p.seed, 'education')!r}", "education")
        elif rule.kind == "seed":
            value = _seed_text(p.seed, rule.seed_field)
            if not value or not re.search(rule.seed_pattern, value.lower()):
                continue
            shown = f"seed {rule.seed_field} {value!r}"
            if rule.other_field:
                other = _seed_text(p.seed, rule.other_field)
                if other and re.search(rule.other_pattern, other.lower()):
                    add(
                        rule,
                        [],
                        f"{shown}, {rule.other_field} {other!r}",
                        f"{rule.seed_field}, seed.{rule.other_field}",
                    )
                continue
            for c in rule.classes:
                for f in by_class.get(c, []):
                    if f.start is not None:  # a change during the window: the seed is the life before it
                        continue
                    add(rule, [f], shown, rule.seed_field)
    doubted = {f.record for f in found if f.severity == "violation"}
    findings.extend(f for f in found if f.severity == "violation" or f.record not in doubted)


# -- 3. filler -------------------------------------------------------------------------------------
_REPEAT_FINDING = 3


def _filler(personas: list[_Persona], findings: list[Finding]) -> dict[str, Any]:
    """How varied each persona's filler messages are; a line sent three times or more is a finding."""
    shares: list[float] = []
    total = titles_total = 0
    pooled: Counter[str] = Counter()
    titles: Counter[str] = Counter()
    for p in personas:
        lines = [m for m in p.messages if m.get("kind") == "filler" and isinstance(m.get("text"), str)]
        keys = Counter(_line_key(m["text"]) for m in lines)
        first: dict[str, str] = {}
        for m in lines:
            first.setdefault(_line_key(m["text"]), str(m.get("id", "?")))
        if lines:
            shares.append(len(keys) / len(lines))
        total += len(lines)
        pooled.update(keys)
        for key, n in keys.most_common():
            if n < _REPEAT_FINDING:
                break
            findings.append(
                Finding(
                    "filler",
                    p.id,
                    "messenger.jsonl",
                    first[key],
                    "text",
                    f"filler line {key!r} sent {n} times",
                    "violation",
                )
            )
        events = [e for e in p.events if e.get("kind") == "filler" and isinstance(e.get("title"), str)]
        titles_total += len(events)
        titles.update(_line_key(e["title"]) for e in events)
    return {
        "messages": total,
        "distinct": len(pooled),
        "distinct_share_min": round(min(shares), 4) if shares else None,
        "distinct_share_mean": round(statistics.fmean(shares), 4) if shares else None,
        "distinct_share_set": round(len(pooled) / total, 4) if total else None,
        "top_repeated": [[k, n] for k, n in pooled.most_common(10)],
        "calendar_titles": titles_total,
        "calendar_titles_distinct_share": round(len(titles) / titles_total, 4) if titles_total else None,
    }


# -- times and weekdays ----------------------------------------------------------------------------
_AMPM = r"(?:a\.?m\.?|p\.?m\.?)"
_TIME = rf"(?:noon|midnight|\d{{1,2}}(?::[0-5]\d)?(?:\s*{_AMPM})?)"
_TIME_PARTS = re.compile(rf"^(?:(noon)|(midnight)|(\d{{1,2}})(?::([0-5]\d))?\s*({_AMPM})?)$", re.I)
_RANGE = re.compile(rf"^({_TIME})\s*(?:-|–|to)\s*({_TIME})$", re.I)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WD_ABBR = {w[:3]: i for i, w in enumerate(_WEEKDAYS)} | {"tues": 1, "thur": 3, "thurs": 3}
_WD_RX = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"


def _weekday_index(word: str) -> int | None:
    w = word.lower().rstrip(".")
    if w in _WEEKDAYS:
        return _WEEKDAYS.index(w)
    return _WD_ABBR.get(w)


def _clock(text: str, inherit_pm: bool | None = None) -> tuple[set[int], bool]:
    """Minutes after midnight a written time can mean, and whether it said am/pm (24-hour counts as
    said). Empty when the text is not a time (a bare number above 12 without minutes)."""
    m = _TIME_PARTS.match(text.strip())
    if not m:
        return set(), False
    if m.group(1):
        return {12 * 60}, True
    if m.group(2):
        return {0}, True
    h, mins, ap = int(m.group(3)), int(m.group(4) or 0), m.group(5)
    if h > 23 or (m.group(4) is None and ap is None and not 1 <= h <= 12):
        return set(), False
    if ap or inherit_pm is not None:
        if h > 12 or h == 0:
            return set(), False
        pm = ap.lower().startswith("p") if ap else bool(inherit_pm)
        return {(h % 12 + (12 if pm else 0)) * 60 + mins}, True
    if h > 12 or h == 0 or (m.group(4) is not None and m.group(3).startswith("0")):
        return {h * 60 + mins}, True
    return {(h % 12) * 60 + mins, (h % 12 + 12) * 60 + mins}, False


def _start_of(text: str) -> set[int]:
    """Minutes a time or a range's start can mean ("5-8pm" starts at 17:00, "10-2" at 10:00 or 22:00)."""
    r = _RANGE.match(text.strip())
    if not r:
        return _clock(text)[0]
    a, b = r.group(1), r.group(2)
    first, said = _clock(a)
    if said or not first:
        return first
    bm = re.search(_AMPM + "$", b, re.I)
    if not bm:
        return first
    b_pm = bm.group(0).lower().startswith("p")
    ha, hb = (int(re.findall(r"\d+", x)[0]) % 12 for x in (a, b))
    return _clock(a, inherit_pm=b_pm if ha <= hb else not b_pm)[0]


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


# -- 4. calendar notes -----------------------------------------------------------------------------
_CHUNK_TIME = re.compile(
    rf"^(?:(?:starts?|begins?|starting) (?:at )?|at )?({_TIME}(?:\s*(?:-|–|to)\s*{_TIME})?)$", re.I
)
_CHUNK_WD = re.compile(r"^(mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|" + _WD_RX[1:-1] + r")\.?(?:\s+(.*))?$", re.I)
_PART_OF_DAY = re.compile(r"^(?:morning|afternoon|evening|night)$", re.I)
_TITLE_AT = re.compile(rf"\bat ({_TIME})$", re.I)
_TITLE_LEAD = re.compile(rf"^(\d{{1,2}}(?::[0-5]\d)?\s*{_AMPM}|\d{{1,2}}:[0-5]\d)\s", re.I)
_TITLE_WD = re.compile(r"^" + _WD_RX + r"\b(?!\s*(?:/|-\s*" + _WD_RX + r"))", re.I)
_EMBEDDED = re.compile(r"^[^:]{2,60}:\s")


def _note_claims(title: str, notes: str) -> Iterator[tuple[str, str, set[int] | None, int | None]]:
    """(field, text, start minutes or None, weekday or None) for each claim about the event itself."""
    title = title.strip()
    if (m := _TITLE_AT.search(title)) or (m := _TITLE_LEAD.match(title)):
        yield "title", title, _start_of(m.group(1)), None
    if m := _TITLE_WD.match(title):
        yield "title", title, None, _weekday_index(m.group(1))
    own = notes.split(";")
    segments = [own[0]] + [s for s in own[1:] if not _EMBEDDED.match(s.strip())]
    for seg in segments:
        for chunk in re.split(r",(?!\d{3}\b)", seg):  # "2,000 yards" is one number, not "2" and "000 yards"
            chunk = chunk.strip()
            if not chunk or not re.search(r"\d|noon|midnight|day\b|\b(?:mon|tue|wed|thu|fri|sat|sun)\b", chunk, re.I):
                continue
            weekday, day_word, rest = None, "", chunk
            if wm := _CHUNK_WD.match(chunk):
                day_word, rest = wm.group(1), (wm.group(2) or "").strip()
                weekday = _weekday_index(day_word)
            if not rest or _PART_OF_DAY.match(rest):
                # a lone "sun" or "sat" is a word, not a day; a lone "Saturday" is the day
                if weekday is not None and (rest or len(day_word) > 5):
                    yield "notes", chunk, None, weekday
                continue
            if tm := _CHUNK_TIME.match(rest):
                minutes = _start_of(tm.group(1))
                if minutes:
                    yield "notes", chunk, minutes, weekday


def _calendar(personas: list[_Persona], findings: list[Finding]) -> dict[str, Any]:
    """Events whose own title or notes state another start time or weekday (one finding of each kind)."""
    with_claims = bad_time = bad_day = 0
    for p in personas:
        for e in p.events:
            start, end = _parse_dt(e.get("start")), _parse_dt(e.get("end"))
            if start is None:
                findings.append(
                    Finding("input", p.id, "calendar.jsonl", str(e.get("id", "?")), "start", "missing or not ISO 8601")
                )
                continue
            if end is not None and end - start >= timedelta(hours=23):
                continue  # an all-day item: its notes' times are moments within the day
            claims = list(_note_claims(str(e.get("title") or ""), str(e.get("notes") or "")))
            if not claims:
                continue
            with_claims += 1
            minute = start.hour * 60 + start.minute
            time_wrong = day_wrong = False
            for fld, text, minutes, weekday in claims:
                if minutes and minute not in minutes and not time_wrong:
                    time_wrong = True
                    said = " or ".join(_hhmm(x) for x in sorted(minutes))
                    findings.append(
                        Finding(
                            "calendar_notes",
                            p.id,
                            "calendar.jsonl",
                            str(e.get("id", "?")),
                            fld,
                            f"{text!r} says {said} but the event starts {start:%a %Y-%m-%d %H:%M}",
                        )
                    )
                if weekday is not None and weekday != start.weekday() and not day_wrong:
                    day_wrong = True
                    findings.append(
                        Finding(
                            "calendar_notes",
                            p.id,
                            "calendar.jsonl",
                            str(e.get("id", "?")),
                            fld,
                            f"{text!r} says {_WEEKDAYS[weekday].title()} but the event is on {start:%A %Y-%m-%d}",
                        )
                    )
            bad_time += time_wrong
            bad_day += day_wrong and not time_wrong
    return {
        "events_with_claims": with_claims,
        "contradicting": bad_time + bad_day,
        "time_contradicting": bad_time,
        "weekday_only_contradicting": bad_day,
    }


# -- 5. message dates ------------------------------------------------------------------------------
_MONTHS = ("january february march april may june july august september october november december").split()
#: months that are also ordinary words count only when capitalised
_AMBIGUOUS_MONTHS = {"may", "march", "august"}
_MONTH_ALT = "|".join(_MONTHS)
_MONTH_CURRENT = (
    re.compile(
        rf"\b(?:it'?s|its|it is)\s+(?:already\s+|finally\s+|officially\s+)?({_MONTH_ALT})\b(?!\s*\d|\s+madness)", re.I
    ),
    re.compile(rf"\balready\s+({_MONTH_ALT})\b(?!\s*\d)", re.I),
    re.compile(rf"\b(?:happy|hello|welcome to)\s+({_MONTH_ALT})\b(?!\s*\d)", re.I),
)
_SEASON_MONTHS = {
    "winter": {11, 12, 1, 2, 3},
    "spring": {2, 3, 4, 5, 6},
    "summer": {5, 6, 7, 8, 9},
    "fall": {8, 9, 10, 11, 12},
    "autumn": {8, 9, 10, 11, 12},
}
_SEASON_ALT = "|".join(_SEASON_MONTHS)
_SEASON_CURRENT = (
    re.compile(
        rf"\b(?:it'?s|its|it is)\s+(?:already\s+|finally\s+|officially\s+)?({_SEASON_ALT})"
        r"(?=\s*(?:$|[.!?,;]|and\b|already\b|again\b))",
        re.I,
    ),
    re.compile(rf"\b({_SEASON_ALT})\s+is\s+(?:finally\s+|officially\s+)?here\b", re.I),
    re.compile(rf"\b(?:this|all this)\s+({_SEASON_ALT})\s+(?:heat|cold|chill|humidity|weather|sun|snow)\b", re.I),
    re.compile(rf"\bhappy first day of\s+({_SEASON_ALT})\b", re.I),
)
_CLAUSE = r"(?:^|[.!?,;:]\s*|\b(?:and|but|so|yay|ugh|omg|ok|finally)\s+)"
_WEEKDAY_TODAY = (
    re.compile(rf"\bhappy\s+{_WD_RX}\b", re.I),
    re.compile(rf"\btoday\s+is\s+{_WD_RX}\b|\btoday's\s+{_WD_RX}\b", re.I),
    re.compile(
        rf"{_CLAUSE}(?:it'?s|its|it is)\s+(?:finally\s+|already\s+|only\s+)?{_WD_RX}"
        rf"(?:\s+(?:morning|afternoon|evening|night|again|already))?(?=\s*(?:$|[.!?,;]|and\b|but\b|so\b))",
        re.I,
    ),
)
_WEEKDAY_TOMORROW = re.compile(rf"\btomorrow\s+is\s+{_WD_RX}\b|\btomorrow's\s+{_WD_RX}\b", re.I)
_WEEKDAY_YESTERDAY = re.compile(rf"\byesterday\s+was\s+{_WD_RX}\b", re.I)
_TGIF = re.compile(r"\btgif\b", re.I)
_ALMOST_WEEKEND = re.compile(r"\balmost (?:the )?weekend\b", re.I)

#: holidays: name -> (pattern, months "happy X" fits, months "X is coming / X prep" fits). Lunar holidays
#: whose month moves across years (Eid, Ramadan, Diwali's exact month) are left out or given wide windows.
HOLIDAYS: dict[str, tuple[str, set[int], set[int]]] = {
    "Christmas": (r"christmas|xmas", {12}, {10, 11, 12}),
    "Thanksgiving": (r"thanksgiving", {11}, {10, 11}),
    "Halloween": (r"halloween", {10, 11}, {9, 10}),
    "New Year": (r"new year(?:'s)?(?! resolution)", {12, 1}, {11, 12, 1}),
    "Valentine's Day": (r"valentine'?s(?: day)?", {2}, {1, 2}),
    "Easter": (r"easter", {3, 4}, {2, 3, 4}),
    "Fourth of July": (r"(?:fourth|4th) of july|july (?:4th|fourth)|independence day", {7}, {5, 6, 7}),
    "Memorial Day": (r"memorial day", {5}, {4, 5}),
    "Labor Day": (r"labor day", {9}, {8, 9}),
    "Mother's Day": (r"mother'?s day", {5}, {4, 5}),
    "Father's Day": (r"father'?s day", {6}, {5, 6}),
    "Lunar New Year": (r"lunar new year|chinese new year|\btet\b", {1, 2}, {12, 1, 2}),
    "Hanukkah": (r"hanukkah|chanukah", {11, 12, 1}, {10, 11, 12}),
    "St. Patrick's Day": (r"st\.? patrick'?s(?: day)?|st\.? paddy'?s", {3}, {2, 3}),
}
_HOLIDAY_RES = {
    name: (
        re.compile(rf"\b(?:happy|merry)\s+(?:{rx})\b", re.I),
        re.compile(
            rf"\b(?:{rx})\s+(?:is\s+)?(?:coming|around the corner|almost here|is here|next week|this weekend|"
            rf"tomorrow|prep|countdown)\b|\bready for\s+(?:{rx})\b",
            re.I,
        ),
        happy,
        near,
    )
    for name, (rx, happy, near) in HOLIDAYS.items()
}
_GREET_MORNING = re.compile(r"^(?:good )?morning(?: all| everyone| y'?all)?$|^gm$|^mornin'?$", re.I)
_GREET_NIGHT = re.compile(r"^(?:good ?night|night night|nighty night|night|gn|nite)$", re.I)
_GREET_EVENING = re.compile(r"^good evening$", re.I)
#: a time said as the time now: a bare hour only when nothing but punctuation or "o'clock" follows it
_NOW_TIME = (
    rf"(?:noon|midnight|\d{{1,2}}:[0-5]\d(?:\s*{_AMPM})?|\d{{1,2}}\s*{_AMPM}|\d{{1,2}}(?=\s*(?:$|[.!?,]|o'?clock)))"
)
_CLOCK_NOW = re.compile(
    r"(?:^|\band\b|\bbut\b|\bnow\b|[,.!?;]\s*)\s*(?:it'?s|its|it is)\s+"
    rf"(only\s+|already\s+|just\s+)?({_NOW_TIME})(?=$|[\s,.!?])"
    r"(?!\s*(?:there|somewhere|o'?clock somewhere|in\b|where\b))",
    re.I,
)
_NOT_EVEN = re.compile(rf"\b(?:not even|barely)\s+({_NOW_TIME})(?=$|[\s,.!?])", re.I)


def _month_ok(sent: datetime, month: int) -> bool:
    """Whether a day within two days of the send date falls in ``month`` (a month turns over)."""
    return any((sent + timedelta(days=d)).month == month for d in range(-2, 3))


def _month_hits(text: str) -> Iterator[int]:
    for rx in _MONTH_CURRENT:
        for m in rx.finditer(text):
            word = m.group(1)
            if word.lower() in _AMBIGUOUS_MONTHS and not word[0].isupper():
                continue
            yield _MONTHS.index(word.lower()) + 1


def _date_problems(text: str, sent: datetime) -> Iterator[tuple[str, str]]:
    """(dimension, why) for each way the text contradicts its own send time."""
    for month in _month_hits(text):
        if not _month_ok(sent, month):
            yield "month", f"says it is {_MONTHS[month - 1].title()} but was sent {sent:%a %Y-%m-%d}"
            break
    day = sent.date() if sent.hour >= 3 else sent.date() - timedelta(days=1)
    for rx in _WEEKDAY_TODAY:
        if (m := rx.search(text)) is not None:
            wd = next(g for g in m.groups() if g)
            if _weekday_index(wd) != day.weekday():
                yield "weekday", f"says today is {wd.title()} but was sent on {sent:%A %Y-%m-%d}"
                break
    for rx, shift, what in ((_WEEKDAY_TOMORROW, 1, "tomorrow"), (_WEEKDAY_YESTERDAY, -1, "yesterday")):
        if (m := rx.search(text)) is not None:
            wd = next(g for g in m.groups() if g)
            if _weekday_index(wd) != (day + timedelta(days=shift)).weekday():
                yield "weekday", f"says {what} is {wd.title()} but was sent on {sent:%A %Y-%m-%d}"
    if _TGIF.search(text) and day.weekday() != 4:
        yield "weekday", f"says TGIF but was sent on {sent:%A %Y-%m-%d}"
    if _ALMOST_WEEKEND.search(text) and day.weekday() >= 5:
        yield "weekday", f"says it is almost the weekend but was sent on {sent:%A %Y-%m-%d}"
    for rx in _SEASON_CURRENT:
        if (m := rx.search(text)) is not None:
            season = m.group(1).lower()
            if sent.month not in _SEASON_MONTHS[season]:
                yield "season", f"says it is {season} but was sent {sent:%Y-%m-%d} (northern hemisphere)"
                break
    for name, (happy_rx, near_rx, happy, near) in _HOLIDAY_RES.items():
        if happy_rx.search(text) and sent.month not in happy:
            yield "holiday", f"wishes a happy {name} on {sent:%Y-%m-%d}"
        elif near_rx.search(text) and sent.month not in near:
            yield "holiday", f"says {name} is near on {sent:%Y-%m-%d}"


def _clock_problems(text: str, sent: datetime) -> Iterator[str]:
    """Why the text contradicts the time of day it was sent, if it does."""
    bare = _WS.sub(" ", re.sub(r"[^\w' ]+", " ", text)).strip()
    minute = sent.hour * 60 + sent.minute
    if _GREET_MORNING.match(bare) and sent.hour >= 14:
        yield f"a morning greeting sent at {sent:%H:%M}"
    elif _GREET_NIGHT.match(bare) and 5 <= sent.hour < 17:
        yield f"a good-night sent at {sent:%H:%M}"
    elif _GREET_EVENING.match(bare) and sent.hour < 15:
        yield f"a good-evening sent at {sent:%H:%M}"
    if (m := _NOT_EVEN.search(text)) is not None:
        minutes = _clock(m.group(1))[0]
        if minutes and all(minute > x + 15 for x in minutes):
            yield f"says it is not even {m.group(1)} but was sent at {sent:%H:%M}"
    if (m := _CLOCK_NOW.search(text)) is not None:
        minutes = _clock(m.group(2))[0]
        qualifier = (m.group(1) or "").strip().lower()
        if minutes:
            if qualifier == "already":
                ok = any(minute >= x - 15 for x in minutes)
            elif qualifier == "only":
                ok = any(minute <= x + 60 for x in minutes)
            else:
                ok = any(abs(minute - x) <= 60 for x in minutes)
            if not ok:
                yield f"says it is {m.group(2)} but was sent at {sent:%H:%M}"


def _message_dates(personas: list[_Persona], findings: list[Finding]) -> dict[str, Any]:
    """Messages whose text contradicts the date or the time of day they were sent."""
    dims: Counter[str] = Counter()
    bad = clock_bad = checked = 0
    for p in personas:
        for msg in p.messages:
            text, sent = msg.get("text"), _parse_dt(msg.get("timestamp"))
            if not isinstance(text, str) or sent is None:
                fld, why = ("text", "not a string") if sent else ("timestamp", "missing or not ISO 8601")
                findings.append(Finding("input", p.id, "messenger.jsonl", str(msg.get("id", "?")), fld, why))
                continue
            checked += 1
            problems = list(_date_problems(text, sent))
            for dim, why in problems:
                dims[dim] += 1
                findings.append(
                    Finding(
                        "message_dates",
                        p.id,
                        "messenger.jsonl",
                        str(msg.get("id", "?")),
                        "text",
                        f"{text!r} {why}",
                        rule=dim,
                    )
                )
            bad += bool(problems)
            clocks = list(_clock_problems(text, sent))
            for why in clocks:
                findings.append(
                    Finding(
                        "time_of_day",
                        p.id,
                        "messenger.jsonl",
                        str(msg.get("id", "?")),
                        "text",
                        f"{text!r}: {why}",
                        rule="time_of_day",
                    )
                )
            clock_bad += bool(clocks)
    return {
        "checked": checked,
        "contradicting": bad,
        "by_dimension": {k: dims[k] for k in ("month", "weekday", "season", "holiday")},
        "time_of_day": clock_bad,
    }


# -- 6. split --------------------------------------------------------------------------------------
def _fragment_apps(p: _Persona) -> tuple[dict[str, str], dict[str, str]]:
    """Fragment id -> app, from clusters.jsonl and from the logs."""
    declared: dict[str, str] = {}
    for c in p.clusters:
        for fr in c.get("fragments") or []:
            if isinstance(fr, dict) and fr.get("id") and fr.get("app") in ("messenger", "calendar"):
                declared[str(fr["id"])] = fr["app"]
    logged: dict[str, str] = {}
    for app, items in (("messenger", p.messages), ("calendar", p.events)):
        for item in items:
            if item.get("kind") == "evidence" and item.get("fragment_id"):
                logged.setdefault(str(item["fragment_id"]), app)
    return declared, logged


def _split(personas: list[_Persona]) -> dict[str, Any]:
    """Evidence fragments by app: from clusters.jsonl when present, else from the logs."""
    declared_n: Counter[str] = Counter()
    logged_n: Counter[str] = Counter()
    for p in personas:
        declared, logged = _fragment_apps(p)
        declared_n.update(declared.values())
        logged_n.update(logged.values())
    source = "clusters.jsonl" if declared_n else "logs"
    n = declared_n or logged_n
    total = n["messenger"] + n["calendar"]
    return {
        "source": source,
        "messenger": n["messenger"],
        "calendar": n["calendar"],
        "messenger_share": round(n["messenger"] / total, 4) if total else None,
        "in_logs": {"messenger": logged_n["messenger"], "calendar": logged_n["calendar"]},
    }


# -- 7. cases --------------------------------------------------------------------------------------
def _cases(personas: list[_Persona], findings: list[Finding]) -> dict[str, Any]:
    """Per case type: counts, facts and fragments per case, and which apps a case's evidence is in."""
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    missing = 0
    for p in personas:
        declared, logged = _fragment_apps(p)
        apps = declared | logged
        for case in p.cases:
            frags = [str(x) for x in case.get("supporting_fragments") or []]
            used = {apps.get(f, "unknown") for f in frags}
            source = (
                "none"
                if not frags
                else "both"
                if {"messenger", "calendar"} <= used
                else ("unknown" if "unknown" in used else next(iter(used)) + "_only")
            )
            absent = [f for f in frags if f not in logged]
            if absent and (logged or p.messages or p.events):
                missing += 1
                findings.append(
                    Finding(
                        "cases",
                        p.id,
                        "cases.jsonl",
                        str(case.get("id", "?")),
                        "supporting_fragments",
                        f"supporting fragments not in the logs: {', '.join(absent)}",
                    )
                )
            by_type[str(case.get("type", "?"))].append(
                {"facts": len(case.get("fact_ids") or []), "fragments": len(frags), "source": source}
            )
    out: dict[str, Any] = {}
    for t in sorted(by_type):
        rows = by_type[t]
        facts = Counter(r["facts"] for r in rows)
        src = Counter(r["source"] for r in rows)
        out[t] = {
            "count": len(rows),
            "facts_per_case_mean": round(statistics.fmean(r["facts"] for r in rows), 3),
            "facts_per_case": {str(k): facts[k] for k in sorted(facts)},
            "fragments_per_case_mean": round(statistics.fmean(r["fragments"] for r in rows), 3),
            "sources": {k: src[k] for k in ("messenger_only", "calendar_only", "both", "unknown", "none")},
        }
    return {"cases": sum(len(v) for v in by_type.values()), "by_type": out, "missing_evidence": missing}


# -- 8. replies ------------------------------------------------------------------------------------
#: news a friend would be glad to hear, and news they would be sorry to hear (searched in lower case)
GOOD_NEWS = re.compile(
    "|".join(
        (
            r"\b(?:is|are|it's|its) finally (?:done|finished|approved|official)\b",
            r"\bfinally (?:done|finished|approved|paid off|passed|fixed|works|make sense|makes sense|got)\b",
            r"\b(?:got|landed) (?:the|a|my) (?:job|offer|promotion|raise|apartment|house|loan|scholarship|part)\b",
            r"\bgot (?:in|accepted|promoted|engaged|the keys|the job)\b",
            r"\bi passed\b|\bpassed (?:the|my)\b|\bpaid off\b|\bdebt free\b|\bwe won\b|\bi won\b",
            r"\bnailed it\b|\bcrushed it\b|\bgood news\b|\bmade the team\b|\bit worked\b",
            r"\bfirst one back\b|\bsent my first\b|\b\d+ days (?:clean|sober)\b|\bis at \$0\b|\bsaved my sanity\b",
        )
    )
)
BAD_NEWS = re.compile(
    "|".join(
        (
            r"\b(?:mom|dad|mother|father|grandma|grandpa|aunt|uncle|brother|sister|cousin|friend|husband|wife)"
            r"\b[^.!?]{0,20}\bdied\b|\b(?:dog|cat|pet)\b[^.!?]{0,20}\bdied\b",
            r"\bpassed away\b|\bfuneral\b|\bcancer\b|\bmiscarriage\b|\bdiagnosed\b",
            r"\blaid off\b|\bgot fired\b|\bfired me\b|\brejected\b|\bdidn't get (?:it|the job|in)\b",
            r"\blost (?:my|the|our) (?:job|dog|cat|wallet|mom|dad|house|apartment)\b",
            r"\bin the (?:hospital|er)\b|\bbroke (?:my|his|her)\b|\baccident\b|\brobbed\b|\bflu\b",
            r"\b(?<!almost )cried\b",
            r"\boverdraft\b|\bevict|\bcan't afford\b|\bbroke down\b|\btotaled\b|\bbroke up\b|\bdumped\b",
        )
    )
)
#: a piece of work finished: good news unless the line also says what went wrong
DONE = re.compile(r"\b(?:is|are|it's|its) (?:all )?(?:done|finished|submitted)\b")
#: what makes good news mixed ("done, but...", "finally done, we cut the song, sorry")
HEDGE = re.compile(r"\bbut\b|\bthough\b|\balthough\b|\bstill\b|\bsorry\b|\bunfortunately\b|\bexcept\b")
#: a good-news line with one of these may be a question or a denial, not news
NEGATION = re.compile(r"\bnot\b|n't\b|\bnever\b|\bno longer\b|\?")
#: a bad-news line with one of these may say the trouble is over
RELIEF = re.compile(r"\bnot\b|\bnever\b|\bno longer\b|\banymore\b|\bover\b|\bbetter\b|\bok now\b|\?")
#: a reaction to bad news; ``SUPPORT`` also fits a hard day, so it contradicts only clear good news
COMMISERATION = re.compile(
    r"\bthat'?s the worst\b|\bthat sucks\b|\boh no\b|^no+!*$|^noo+\b|\boof\b|\byikes\b|\bso sorry\b|\brip\b|😢|😭|💔"
)
SUPPORT = re.compile(r"\bhow are you holding up\b|\bhang in there\b|\bsending (?:hugs|love|strength)\b")
CELEBRATION = re.compile(
    r"\bcongrat|\blove that\b|\bproud of you\b|\bso proud\b|\bthat'?s huge\b|\bnice\b|\byay\b|\byess+\b|\bamazing\b|"
    r"\biconic\b|\bgood for you\b|\bbig day\b|🎉|🥳|\bwoo+\b|\blol\b|\blmao\b|\bhaha\b|😂|💀|\bha\b"
)


def _replies(personas: list[_Persona], findings: list[Finding]) -> dict[str, Any]:
    """Replies (the next message of a session, from another sender) whose sentiment contradicts the news."""
    pairs = bad = 0
    for p in personas:
        ordered = sorted(
            (m for m in p.messages if isinstance(m.get("text"), str)),
            key=lambda m: (str(m.get("session_id", "")), str(m.get("timestamp", ""))),
        )
        for a, b in pairwise(ordered):
            if a.get("session_id") != b.get("session_id") or a.get("sender") == b.get("sender"):
                continue
            pairs += 1
            said, reply = a["text"].lower(), b["text"].lower().strip()
            plain = not BAD_NEWS.search(said) and not NEGATION.search(said) and not HEDGE.search(said)
            good = plain and bool(GOOD_NEWS.search(said))
            done = plain and bool(DONE.search(said))
            sad = bool(BAD_NEWS.search(said)) and not GOOD_NEWS.search(said) and not RELIEF.search(said)
            cheer = bool(CELEBRATION.search(reply))
            sorry = bool(COMMISERATION.search(reply)) and not cheer
            support = bool(SUPPORT.search(reply)) and not cheer
            why = ""
            if ((good or done) and sorry) or (good and support):
                why = "commiserates with good news"
            elif sad and CELEBRATION.search(reply) and not COMMISERATION.search(reply) and not SUPPORT.search(reply):
                why = "celebrates or laughs at bad news"
            if why:
                bad += 1
                findings.append(
                    Finding(
                        "replies",
                        p.id,
                        "messenger.jsonl",
                        str(b.get("id", "?")),
                        "text",
                        f"{b['text']!r} {why}: {a['text']!r} ({a.get('id', '?')})",
                    )
                )
    return {"pairs": pairs, "contradicting": bad}


# -- the audit -------------------------------------------------------------------------------------
def plausibility(persona_id: str, seed: dict[str, Any], facts: list[dict[str, Any]]) -> list[Finding]:
    """The plausibility findings of one persona from its seed and facts as JSON objects (what
    ``persona.json`` and ``facts.json`` hold): `CONSTRAINT_RULES` and facts listed twice. The generator
    reports these in ``verification.json``; they come from this module's own rules, not the sampler's."""
    findings: list[Finding] = []
    p = _Persona(persona_id, Path(persona_id), seed=seed, facts=facts)
    _shared_facts([p], findings)
    _constraints(p, findings)
    return [f for f in findings if f.check in ("constraints", "duplicate_fact")]


def audit_set(path: str | Path) -> RealismReport:
    """Audit the persona set in ``path`` (a set folder, or one persona folder) from its files alone.

    Raises `RealismInputError` when ``path`` holds no persona folder. Unreadable files and lines do not
    stop the audit: they become findings of check ``input`` naming the file and line."""
    root = Path(path)
    if not root.is_dir():
        raise RealismInputError(f"{root}: not a folder")
    folders = _persona_folders(root)
    if not folders:
        raise RealismInputError(f"{root}: no persona folder (a folder holding persona.json or facts.json)")
    findings: list[Finding] = []
    seeds = _set_seeds(root)
    personas = [_load(folder, seeds, findings) for folder in folders]
    report = RealismReport(str(root), [p.id for p in personas])
    report.figures["shared_facts"] = _shared_facts(personas, findings)
    for p in personas:
        _constraints(p, findings)
    con = [f for f in findings if f.check == "constraints"]
    report.figures["constraints"] = {
        "rules": len(CONSTRAINT_RULES),
        "violations": sum(f.severity == "violation" for f in con),
        "suspicious": sum(f.severity == "suspicious" for f in con),
        "personas_with_violations": len({f.persona for f in con if f.severity == "violation"}),
        "by_rule": dict(Counter(f.rule for f in con).most_common()),
    }
    report.figures["filler"] = _filler(personas, findings)
    report.figures["calendar_notes"] = _calendar(personas, findings)
    report.figures["message_dates"] = _message_dates(personas, findings)
    report.figures["split"] = _split(personas)
    report.figures["cases"] = _cases(personas, findings)
    report.figures["replies"] = _replies(personas, findings)
    report.findings = findings
    return report
