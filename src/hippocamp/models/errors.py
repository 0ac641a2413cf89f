"""Errors of the model layer. Every failure says which model and why; none is a silent default.
Messages are redacted (`hippocamp.redact`): a key in a model URL or the environment never shows."""

from __future__ import annotations

from hippocamp.redact import redact_text

__all__ = ["ModelError", "ModelNotAvailableError", "ModelOutputError", "TransientModelError"]


class ModelError(Exception):
    """A model call failed for good (after retries, or for a reason retrying cannot fix)."""

    def __init__(self, message: str, model: str | None = None):
        self.model = redact_text(model) if model else model
        super().__init__(redact_text(f"{model}: {message}" if model else message))


class TransientModelError(ModelError):
    """A failure worth retrying: timeout, connection error, 429, 5xx, a server restarting."""


class ModelNotAvailableError(ModelError):
    """The model cannot be used here: unknown provider, weights not installed, runtime missing."""


class ModelOutputError(ModelError):
    """The model answered, but not in the required shape (e.g. invalid JSON after a repair retry)."""

    def __init__(self, message: str, raw: str, model: str | None = None):
        self.raw = redact_text(raw)
        super().__init__(f"{message}; raw output: {raw[:500]!r}", model)
