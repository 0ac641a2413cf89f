"""Compatibility names: the persona generator lives in `hippocamp.synth.personas`; this package keeps its
public names importable from ``hippocamp.pcontext`` (and the banks' old names in ``templates/``)."""

from hippocamp.synth.personas import (
    PipelineError,
    SeedError,
    SeedFilter,
    SetConfig,
    parse_filter,
    read_seed_file,
    run_set,
    sample_seeds,
    summarize,
    verify_persona,
)

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
