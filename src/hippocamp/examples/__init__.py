"""The bundled example profile: a tiny personal computer in the HippoCamp release layout.

``Mira/`` holds the file tree ``Mira/Mira/``, the annotations ``Mira/Mira.json`` (six questions in the
release's spelling) and ``Mira/Mira_files.xlsx`` (per-file times and locations). It is rebuilt by
``scripts/build_example.py``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["example_profile"]


def example_profile() -> Path:
    """The folder of the bundled example profile (pass it to `hippocamp.dataset.load_profile`)."""
    return Path(__file__).resolve().parent / "Mira"
