"""Compatibility names for the template engine's banks (`facts.BANK`, `text.QUESTIONS`, ...): the banks are
data files in ``synth/personas/data/``, read and validated by `hippocamp.synth.personas.banks`."""
