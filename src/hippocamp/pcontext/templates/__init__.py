"""Compatibility names for the template engine's banks (`facts.BANK`, `text.QUESTIONS`, ...): the banks are
data files in ``pcontext/data/``, read and validated by `hippocamp.pcontext.banks`."""
