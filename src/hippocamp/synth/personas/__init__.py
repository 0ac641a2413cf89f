"""P-ContextBench construction: personas from census seeds, hidden facts, social circles, app logs
with leakage-controlled evidence, filler and decoys, and T1–T5 test cases, each stage verified.

One module per stage, its template half and its model half together: `seeds`, `interview`, `facts`
(with the audit), `circle`, `fragments`, `filler` (and decoys), `logs`, `cases`; the checks in `verify`;
what the model halves share in `model`; the resumable run in `pipeline`; the banks in `banks` and
``data/``, the prompts in ``prompts/``."""

from hippocamp.synth.personas.config import PipelineError, SetConfig
from hippocamp.synth.personas.pipeline import run_set
from hippocamp.synth.personas.seeds import SeedError, SeedFilter, parse_filter, read_seed_file, sample_seeds
from hippocamp.synth.personas.summary import summarize
from hippocamp.synth.personas.verify import verify_persona

__all__ = [
    "PipelineError",
    "SeedError",
    "SeedFilter",
    "SetConfig",
    "parse_filter",
    "read_seed_file",
    "run_set",
    "sample_seeds",
    "summarize",
    "verify_persona",
]
