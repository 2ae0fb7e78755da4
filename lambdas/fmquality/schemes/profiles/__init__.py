"""Rubric profiles (issue 11): the profile spec, the profile-specific test-case fields and the
deterministic scorers of the research-agent and tool-use profiles."""

from fmquality.config.profile import Profile, available_profiles, load_profile
from fmquality.domain.errors import ProfileError

__all__ = ["Profile", "ProfileError", "available_profiles", "load_profile"]
