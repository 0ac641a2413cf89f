"""Stories: each adds the files of one thread of a person's life and the questions they answer.

A story reads the world, draws from its own random stream (``ctx.rng(name)``), adds artifacts and
asks to the plan, and may add calendar events to the shared calendar (written once, at the end).
Keys are local to a file. Questions never depend on text a language model may rewrite: only unkeyed
filler lines are ever enriched.

What stories share is in `base`; each story is a module of this package registered under kind
``story`` (`registry.BUILTINS` lists them in the order they are told, see `all_stories`).
"""

from hippocamp.synth.stories.base import (
    SCALES,
    Context,
    Scale,
    Story,
    all_stories,
    calendar_path,
    gps,
    money,
    nice_date,
    story,
)

__all__ = ["SCALES", "Context", "Scale", "Story", "all_stories", "calendar_path", "gps", "money", "nice_date", "story"]
