"""What every story shares: the context it adds to, the scales, its registration, and how money,
dates, times and places are written.

A story is a function of a `Context`, registered under kind ``story`` with ``@story(NAME)``. The
order in which stories are told is part of a profile's bytes (image numbers, the order of files and
questions, values one story leaves for another in ``world.extra``): `all_stories` tells the built-ins
in the order `registry.BUILTINS` lists their modules, whatever imported them first.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from hippocamp import registry
from hippocamp.synth.plan import Artifact, Plan
from hippocamp.synth.render.text import CalEvent
from hippocamp.synth.world import World, rng_for

__all__ = [
    "ICS_DAYS",
    "SCALES",
    "WEEKDAYS",
    "Context",
    "Scale",
    "Story",
    "all_stories",
    "calendar_path",
    "cap_first",
    "gps",
    "hm",
    "money",
    "nice_date",
    "plain",
    "story",
    "weekday_on_or_after",
]

Tell = Callable[["Context"], None]


@dataclass(frozen=True)
class Story:
    """A registered story: ``tell(ctx)`` adds its files, questions and events; it can tell ``repeats``
    distinct instances (a scale asks for up to ``Scale.repeat``)."""

    name: str
    tell: Tell
    repeats: int = 1


def story(name: str, repeats: int = 1) -> Callable[[Tell], Tell]:
    """Decorator: register a story function under kind ``story``; the function is returned unchanged."""

    def deco(fn: Tell) -> Tell:
        registry.register("story", name)(Story(name, fn, repeats))
        return fn

    return deco


def all_stories() -> list[Story]:
    """Every registered story in the order they are told: the built-ins in the order of their modules
    in `registry.BUILTINS`, then plug-ins in the order they registered."""
    modules = registry.BUILTINS["story"]
    rank = {module: i for i, module in enumerate(modules)}
    told: list[Story] = [s for _, s in registry.items("story")]
    return sorted(told, key=lambda s: rank.get(s.tell.__module__, len(modules)))


@dataclass(frozen=True)
class Scale:
    name: str
    months: int
    receipts: int  # supermarket receipts in the arithmetic month
    filler: int  # approximate number of filler files
    repeat: int  # instances of each repeatable story (memos, videos, plans, trips, receipt months)


SCALES = {
    "small": Scale("small", 3, 3, 33, 1),
    "medium": Scale("medium", 4, 6, 440, 3),
    "large": Scale("large", 12, 10, 3000, 5),
}


@dataclass
class Context:
    world: World
    plan: Plan
    scale: Scale
    events: list[CalEvent] = field(default_factory=list)
    #: which telling of a repeatable story is running (0 for the first)
    instance: int = 0
    _img: int = 1000

    def rng(self, name: str) -> random.Random:
        if self.instance:
            return rng_for(self.world.seed, "story", name, self.instance)
        return rng_for(self.world.seed, "story", name)

    def img_name(self, ext: str = "jpg") -> str:
        self._img += 1 + (self._img * 7919) % 13
        return f"IMG_{self._img:04d}.{ext}"

    def add(
        self,
        path: str,
        renderer: str,
        when: datetime,
        modified: datetime | None = None,
        *,
        location: str = "",
        needs: tuple[str, ...] = (),
        **spec: object,
    ) -> str:
        return self.plan.add(Artifact(path, renderer, dict(spec), when, modified or when, location, needs))

    def event(self, ev: CalEvent) -> None:
        self.events.append(ev)


def calendar_path(world: World) -> str:
    return f"Calendar/{world.owner.first} personal.ics"


def money(currency: str, amount: float) -> str:
    return f"{currency} {amount:,.2f}"


def nice_date(d: date | datetime) -> str:
    return f"{d.day} {d:%B %Y}"


def plain(x: float) -> str:
    """A number as a spreadsheet shows it: ``167.8``, ``1450``, ``2085.37``."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def hm(t: datetime) -> str:
    return f"{t:%H:%M}"


def gps(lat: float, lon: float) -> str:
    return f"{abs(lat):.4f} {'N' if lat >= 0 else 'S'}, {abs(lon):.4f} {'E' if lon >= 0 else 'W'}"


def cap_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def weekday_on_or_after(d: date, weekday: int) -> date:
    return d + timedelta(days=(weekday - d.weekday()) % 7)


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ICS_DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
