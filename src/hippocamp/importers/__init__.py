"""Importers: turn downloaded benchmark data into hippocamp profiles and suites.

- `import_hippocamp` (``hippocamp import hippocamp``): a downloaded HippoCamp release, referenced in
  place, validated and indexed, described by a small ``suite.json``.
- `import_financebench` (``hippocamp import financebench``): FinanceBench questions and filings as a
  profile in the release layout (an analyst's ``Work/Filings/<Company>/<Year>/`` tree).
"""

from hippocamp.importers._common import ImporterError
from hippocamp.importers.financebench import (
    REASONING_TABLE,
    FinanceBenchImport,
    Skipped,
    import_financebench,
    reasoning_labels,
)
from hippocamp.importers.hippocamp import (
    SUITE_FORMAT,
    ProfileEntry,
    SuiteManifest,
    apply_metadata_times,
    find_release_profiles,
    import_hippocamp,
    read_suite,
)

__all__ = [
    "REASONING_TABLE",
    "SUITE_FORMAT",
    "FinanceBenchImport",
    "ImporterError",
    "ProfileEntry",
    "Skipped",
    "SuiteManifest",
    "apply_metadata_times",
    "find_release_profiles",
    "import_financebench",
    "import_hippocamp",
    "read_suite",
    "reasoning_labels",
]
