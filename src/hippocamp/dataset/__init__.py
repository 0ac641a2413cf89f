"""Datasets of HippoCamp records: loading profiles, derived attributes, difficulty, statistics."""

from hippocamp.dataset.derived import DifficultyModel, Features, count_tokens, features_of
from hippocamp.dataset.profile import FileMeta, Profile, ProfileError, load_profile, normalize_path

__all__ = [
    "DifficultyModel",
    "Features",
    "FileMeta",
    "Profile",
    "ProfileError",
    "count_tokens",
    "features_of",
    "load_profile",
    "normalize_path",
]
