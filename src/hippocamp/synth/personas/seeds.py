"""Stage 1: demographic seeds from the shipped U.S. census marginals, or from a user's seed file.

``data/marginals.json`` holds published figures (ACS 2022, Census 2020; each table names its
source) and a few conditionals of ours (household, education, work and income given age or
education). Sampling draws each attribute from its distribution *restricted to what the filter
allows*, so ``age=30-45,occupation=nurse`` samples exactly the conditional population without
rejection loops. A seed file (CSV or JSONL) with Nemotron-Personas-USA columns (``age``, ``sex``,
``marital_status``, ``education_level``, ``occupation``, ``city``, ``state``,
``hobbies_and_interests_list``, ``career_goals_and_ambitions``, ...) is read leniently; columns it
lacks are sampled.
"""

from __future__ import annotations

import ast
import csv
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from hippocamp.schema.io import RecordsFileError, json_objects
from hippocamp.schema.pcontext import Seed
from hippocamp.synth.world import rng_for

__all__ = [
    "NARRATIVE_COLUMNS",
    "SeedError",
    "SeedFilter",
    "marginals",
    "occupation_group_of",
    "parse_filter",
    "read_seed_file",
    "sample_seeds",
    "working",
]


class SeedError(ValueError):
    """A filter or seed file that cannot be used; names the file, row and field."""


@cache
def marginals() -> dict[str, Any]:
    """The shipped marginals table."""
    text = resources.files("hippocamp.synth.personas").joinpath("data/marginals.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def working(seed: Seed) -> bool:
    """Whether the seed has a job (not retired, a student, at home or unemployed)."""
    return seed.occupation_group not in ("not in labor force", "unemployed", "")


@dataclass(frozen=True)
class SeedFilter:
    """``age`` as an inclusive range; other attributes as case-insensitive substrings."""

    age: tuple[int, int] | None = None
    text: dict[str, str] = field(default_factory=dict)

    def allows(self, attribute: str, value: str) -> bool:
        want = self.text.get(attribute)
        return want is None or want in value.lower()

    def matches(self, seed: Seed) -> bool:
        if self.age and not self.age[0] <= seed.age <= self.age[1]:
            return False
        values = {
            "sex": seed.sex,
            "state": seed.state,
            "region": seed.region,
            "city": seed.city,
            "household": seed.household,
            "education": seed.education,
            "occupation": f"{seed.occupation} | {seed.occupation_group}",
            "income": seed.income_band,
        }
        return all(k in values and want in values[k].lower() for k, want in self.text.items())


FILTER_KEYS = ("age", "sex", "state", "region", "city", "household", "education", "occupation", "income")


def parse_filter(spec: str | None) -> SeedFilter:
    """``"age=30-45,occupation=nurse"`` -> a `SeedFilter`; unknown keys and bad ranges are errors."""
    if not spec:
        return SeedFilter()
    age: tuple[int, int] | None = None
    text: dict[str, str] = {}
    for part in spec.split(","):
        key, sep, value = (x.strip() for x in part.partition("="))
        if not sep or not value:
            raise SeedError(f"filter {part!r}: expected key=value (keys: {', '.join(FILTER_KEYS)})")
        key = key.lower()
        if key not in FILTER_KEYS:
            raise SeedError(f"filter key {key!r} unknown; use one of {', '.join(FILTER_KEYS)}")
        if key == "age":
            lo, _, hi = value.partition("-")
            try:
                low, high = int(lo), int(hi or lo)
            except ValueError:
                raise SeedError(f"filter age={value!r}: expected N or N-M") from None
            if low > high:
                raise SeedError(f"filter age={value!r}: the range is empty")
            age = (low, high)
        else:
            text[key] = value.lower()
    return SeedFilter(age, text)


def _pick(rng: random.Random, weights: dict[str, float], what: str) -> str:
    items = [(k, w) for k, w in weights.items() if w > 0]
    if not items:
        raise SeedError(f"no {what} is allowed by the filter")
    return rng.choices([k for k, _ in items], [w for _, w in items])[0]


def _band(age: int) -> str:
    for band in marginals()["age"]:
        lo, hi = (int(x) for x in band.split("-"))
        if lo <= age <= hi:
            return band
    return "75-90"


def _conditioned(base: dict[str, float], multipliers: dict[str, float] | None) -> dict[str, float]:
    m = multipliers or {}
    return {k: w * m.get(k, 1.0) for k, w in base.items()}


def _restrict(weights: dict[str, float], flt: SeedFilter, attribute: str) -> dict[str, float]:
    return {k: w for k, w in weights.items() if flt.allows(attribute, k)}


def _age(rng: random.Random, flt: SeedFilter) -> int:
    table = marginals()["age"]
    lo_f, hi_f = flt.age or (18, 90)
    weights: dict[str, float] = {}
    for band, w in table.items():
        lo, hi = (int(x) for x in band.split("-"))
        overlap = min(hi, hi_f) - max(lo, lo_f) + 1
        if overlap > 0:
            weights[band] = w * overlap / (hi - lo + 1)
    band = _pick(rng, weights, "age")
    lo, hi = (int(x) for x in band.split("-"))
    return rng.randint(max(lo, lo_f), min(hi, hi_f))


#: goals of a working life: not a retiree's, nor (for a promotion) anyone out of work
_WORKING_GOALS = {"get a promotion": ("retired", "unemployed", "unable to work", "homemaker", "student"),
                  "retire comfortably": ("retired", "unable to work")}  # fmt: skip


def _fitting_goals(goals: list[str], occupation: str, age: int) -> list[str]:
    """The goals a person in ``occupation`` at ``age`` could hold ("get a promotion" is not a retiree's,
    "finish a degree" not a 75-year-old's)."""
    status = occupation.lower()
    kept = [g for g in goals if not any(s in status for s in _WORKING_GOALS.get(g, ()))]
    if age >= 70:
        kept = [g for g in kept if g not in ("finish a degree", "run a half marathon")]
    return kept if len(kept) >= 2 else goals


def _occupation(rng: random.Random, age: int, flt: SeedFilter) -> tuple[str, str]:
    data = marginals()
    want = flt.text.get("occupation")
    labor = _conditioned(data["labor"], data["labor_by_age"].get(_band(age)))
    if want:  # a not-working status matches by name; an occupation by its name or its group
        labor = {k: w for k, w in labor.items() if k == "employed" or want in k}
    status = _pick(rng, labor, "work status")
    if status != "employed":
        return status, "not in labor force" if status != "unemployed" else "unemployed"
    jobs: list[tuple[str, str, float]] = []
    for group, (share, names) in data["occupation_group"].items():
        for name in names:
            if not want or want in name.lower() or want in group.lower():
                jobs.append((name, group, share / len(names)))
    if not jobs:
        known = sorted({n for _, names in data["occupation_group"].values() for n in names})
        raise SeedError(f"filter occupation={want!r} matches no shipped occupation; e.g. {', '.join(known[:12])}")
    name, group, _ = rng.choices(jobs, [w for *_, w in jobs])[0]
    return name, group


#: words of a free-text occupation -> its SOC major group (checked after the shipped occupation names)
_GROUP_WORDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        (
            "nurse",
            "physician",
            "doctor",
            "surgeon",
            "pharmacist",
            "therapist",
            "paramedic",
            "emt",
            "dentist",
            "hygienist",
            "radiolog",
            "sonograph",
            "technologist",
            "clinician",
            "midwife",
            "optometrist",
            "veterinarian",
            "anesthes",
            "icu",
            "psychiatr",
        ),
        "Healthcare practitioners and technical",
    ),
    (("aide", "nursing assistant", "medical assistant", "caregiver", "phlebotom", "orderly"), "Healthcare support"),
    (
        ("teacher", "professor", "instructor", "tutor", "librarian", "lecturer", "educator"),
        "Educational instruction and library",
    ),
    (
        ("developer", "programmer", "software", "data scientist", "analyst", "engineer, software", "it "),
        "Computer and mathematical",
    ),
    (("engineer", "architect", "drafter", "surveyor"), "Architecture and engineering"),
    (("police", "officer", "firefighter", "guard", "deputy", "sheriff", "corrections"), "Protective service"),
    (
        ("food service", "cook", "chef", "server", "waiter", "waitress", "barista", "bartender", "dishwasher"),
        "Food preparation and serving",
    ),
    (("manager", "director", "executive", "owner", "administrator", "supervisor"), "Management"),
    (
        ("accountant", "auditor", "financial", "insurance", "loan", "hr ", "human resources", "analyst"),
        "Business and financial operations",
    ),
    (("lawyer", "attorney", "paralegal", "judge"), "Legal"),
    (("social worker", "counselor", "clergy", "pastor"), "Community and social service"),
    (
        ("designer", "artist", "writer", "photographer", "musician", "actor", "journalist", "editor"),
        "Arts, design, entertainment, sports, and media",
    ),
    (("scientist", "biologist", "chemist", "lab ", "technician"), "Life, physical, and social science"),
    (("cashier", "sales", "retail", "realtor", "real estate"), "Sales and related"),
    (
        ("clerk", "secretary", "receptionist", "assistant", "dispatcher", "bookkeeper"),
        "Office and administrative support",
    ),
    (("driver", "pilot", "trucker", "courier", "mover"), "Transportation and material moving"),
    (
        ("electrician", "plumber", "carpenter", "construction", "roofer", "welder", "mason"),
        "Construction and extraction",
    ),
    (("mechanic", "repair", "installer", "technician"), "Installation, maintenance, and repair"),
    (
        ("janitor", "landscaper", "housekeeper", "groundskeeper", "custodian"),
        "Building and grounds cleaning and maintenance",
    ),
    (("hairstylist", "barber", "childcare", "nanny", "trainer"), "Personal care and service"),
    (("farmer", "rancher", "fisher"), "Farming, fishing, and forestry"),
    (("machinist", "assembler", "operator", "production"), "Production"),
)
#: a free-text occupation that is a work status, not a job
_STATUS_WORDS = {
    "retired": "not in labor force",
    "student": "not in labor force",
    "homemaker": "not in labor force",
    "stay-at-home": "not in labor force",
    "not working": "not in labor force",
    "not in labor force": "not in labor force",
    "unemployed": "unemployed",
    "between jobs": "unemployed",
}


def occupation_group_of(occupation: str) -> str:
    """The occupation group of a free-text occupation from a seed file ("ICU nurse" -> Healthcare
    practitioners and technical): a shipped occupation name, then words of each group; a status
    ("retired", "student") is not working. An occupation no rule knows is still a job: "Other"."""
    text = f" {occupation.strip().lower().replace('_', ' ')} "
    for word, group in _STATUS_WORDS.items():
        if word in text:
            return group
    for group, (_, names) in marginals()["occupation_group"].items():
        if any(name.lower() in text for name in names):
            return str(group)
    for words, group in _GROUP_WORDS:
        if any(w in text for w in words):
            return group
    return "Other"


def _state(rng: random.Random, flt: SeedFilter) -> tuple[str, str, str]:
    options: list[tuple[str, str, list[str], float]] = []
    for region, states in marginals()["state"].items():
        if not flt.allows("region", region.lower()):
            continue
        for state, (pop, cities) in states.items():
            if flt.allows("state", state.lower()):
                options.append((region, state, cities, pop))
    if not options:
        raise SeedError("no state or region is allowed by the filter")
    region, state, cities, _ = rng.choices(options, [o[3] for o in options])[0]
    allowed = [c for c in cities if flt.allows("city", c.lower())] or cities
    return region, state, rng.choice(allowed)


def _name(rng: random.Random, sex: str) -> str:
    data = marginals()
    return f"{rng.choice(data['first_names'][sex])} {rng.choice(data['last_names'])}"


def _complete(rng: random.Random, flt: SeedFilter, known: dict[str, Any], sid: str, source: str) -> Seed:
    """A seed from ``known`` attributes, sampling the missing ones from the marginals."""
    data = marginals()
    age = int(known.get("age") or _age(rng, flt))
    band = _band(age)
    sex = known.get("sex") or _pick(rng, _restrict(data["sex"], flt, "sex"), "sex")
    if known.get("state"):
        state = known["state"]
        region = next((r for r, states in data["state"].items() if state in states), "")
        city = known.get("city") or ""
    else:
        region, state, city = _state(rng, flt)
    household = known.get("household") or _pick(
        rng,
        _restrict(_conditioned(data["household"], data["household_by_age"].get(band)), flt, "household"),
        "household",
    )
    education = known.get("education") or _pick(
        rng,
        _restrict(_conditioned(data["education"], data["education_by_age"].get(band)), flt, "education"),
        "education",
    )
    if known.get("occupation"):
        occupation = known["occupation"]
        group = known.get("occupation_group") or occupation_group_of(occupation)
    else:
        occupation, group = _occupation(rng, age, flt)
    income = _pick(
        rng,
        _restrict(_conditioned(data["income_band"], data["income_by_education"].get(education)), flt, "income"),
        "income band",
    )
    hobbies = known.get("hobbies") or rng.sample(data["hobbies"], 2)
    goals = known.get("goals") or rng.sample(_fitting_goals(data["goals"], occupation, age), 2)
    return Seed(
        id=sid,
        name=known.get("name") or _name(rng, sex),
        age=age,
        sex=sex,
        state=state,
        region=region,
        city=city,
        household=household,
        education=education,
        occupation=occupation,
        occupation_group=group,
        income_band=income,
        hobbies=list(hobbies)[:4],
        goals=list(goals)[:3],
        narrative=known.get("narrative", ""),
        source=source,
    )


def sample_seeds(n: int, seed: int, flt: SeedFilter | None = None) -> list[Seed]:
    """``n`` seeds from the census marginals, deterministic in ``seed``, all matching ``flt``."""
    flt = flt or SeedFilter()
    return [_complete(rng_for(seed, "seed", i), flt, {}, f"p{i + 1:03d}", "census-marginals") for i in range(n)]


_HOUSEHOLD = {
    "married_present": "married, no children at home",
    "married": "married, no children at home",
    "never_married": "living alone",
    "divorced": "living alone",
    "separated": "living alone",
    "widowed": "living alone",
}
_EDUCATION = {
    "less_than_9th": "less than high school",
    "9th_12th_no_diploma": "less than high school",
    "high_school": "high school diploma",
    "some_college": "some college",
    "associates": "associate degree",
    "bachelors": "bachelor's degree",
    "graduate": "graduate degree",
}


def _as_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(x) for x in value]
    text = str(value or "").strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            return [str(x) for x in parsed]
    return [x.strip() for x in text.replace(";", ",").split(",") if x.strip()]


def _row_to_known(row: dict[str, Any], where: str) -> dict[str, Any]:
    known: dict[str, Any] = {}
    if row.get("age") not in (None, ""):
        try:
            known["age"] = int(float(row["age"]))
        except ValueError:
            raise SeedError(f"{where}: field 'age' is not a number: {row['age']!r}") from None
        if not 18 <= known["age"] <= 100:
            raise SeedError(f"{where}: field 'age' must be 18-100, got {known['age']}")
    sex = str(row.get("sex") or "").strip().lower()
    if sex:
        if sex in ("f", "female", "woman"):
            known["sex"] = "female"
        elif sex in ("m", "male", "man"):
            known["sex"] = "male"
        else:
            raise SeedError(f"{where}: field 'sex' must be female or male, got {row['sex']!r}")
    for col in ("state", "city", "occupation", "name"):
        if row.get(col):
            known[col] = str(row[col]).strip()
    if not known.get("name") and (row.get("first_name") or row.get("last_name")):
        known["name"] = f"{row.get('first_name', '')} {row.get('last_name', '')}".strip()
    marital = str(row.get("marital_status") or row.get("household") or "").strip()
    if marital:
        known["household"] = _HOUSEHOLD.get(marital.lower(), marital.replace("_", " "))
    edu = str(row.get("education_level") or row.get("education") or "").strip()
    if edu:
        known["education"] = _EDUCATION.get(edu.lower(), edu.replace("_", " "))
    hobbies = _as_list(row.get("hobbies_and_interests_list") or row.get("hobbies"))
    if hobbies:
        known["hobbies"] = hobbies
    goals = row.get("career_goals_and_ambitions") or row.get("goals")
    if goals:
        known["goals"] = _as_list(goals) if isinstance(goals, list) else [str(goals).strip()]
    narrative = [str(row[c]).strip() for c in NARRATIVE_COLUMNS if row.get(c) and str(row[c]).strip()]
    if narrative:
        known["narrative"] = " ".join(narrative)[:4000]
    return known


#: the free-text columns of a Nemotron-Personas-USA row that `Seed.narrative` keeps
NARRATIVE_COLUMNS = (
    "persona",
    "professional_persona",
    "sports_persona",
    "arts_persona",
    "travel_persona",
    "culinary_persona",
    "cultural_background",
    "skills_and_expertise",
    "narrative",
)


def _rows(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            yield from enumerate(csv.DictReader(fh), start=2)
        return
    try:
        yield from json_objects(path)
    except RecordsFileError as exc:
        raise SeedError(str(exc)) from None


def read_seed_file(path: Path, n: int, seed: int, flt: SeedFilter | None = None) -> list[Seed]:
    """Up to ``n`` seeds from a CSV or JSONL file (rows in order, those the filter allows)."""
    flt = flt or SeedFilter()
    if not path.is_file():
        raise SeedError(f"{path}: no such seed file")
    if path.suffix.lower() not in (".csv", ".jsonl", ".json"):
        raise SeedError(f"{path}: a seed file is .csv or .jsonl")
    out: list[Seed] = []
    for line, row in _rows(path):
        where = f"{path}: {'row' if path.suffix.lower() == '.csv' else 'line'} {line}"
        known = _row_to_known(row, where)
        sid = f"p{len(out) + 1:03d}"
        candidate = _complete(rng_for(seed, "file-seed", line), SeedFilter(), known, sid, f"file:{path.name}:{line}")
        if flt.matches(candidate):
            out.append(candidate)
            if len(out) == n:
                break
    return out
