"""P-ContextBench construction: personas from census seeds, hidden facts, social circles, app logs
with leakage-controlled evidence, filler and decoys, and T1–T5 test cases, each stage verified."""

from hippocamp.pcontext.pipeline import PipelineError, SetConfig, run_set, summarize, verify_persona
from hippocamp.pcontext.seeds import SeedError, SeedFilter, parse_filter, read_seed_file, sample_seeds

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
