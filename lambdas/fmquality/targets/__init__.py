"""Targets that produce the answers a run scores (see ``targets.base`` for the spec grammar)."""
