"""Checking HippoCamp records against the files of their profile (`hippocamp validate`)."""

from hippocamp.validate.context import CheckContext, ValidateOptions
from hippocamp.validate.run import rule_names, validate_profile

__all__ = ["CheckContext", "ValidateOptions", "rule_names", "validate_profile"]
