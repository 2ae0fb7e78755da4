"""Rubric profiles (issue 11): the profile spec, the profile-specific test-case fields and the
deterministic scorers of the research-agent and tool-use profiles."""

from fmquality.profiles.spec import Profile, ProfileError, available_profiles, load_profile

__all__ = ["Profile", "ProfileError", "available_profiles", "load_profile"]
