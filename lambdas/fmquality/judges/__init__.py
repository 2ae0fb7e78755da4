"""Judges: ``offline`` (deterministic default), ``bedrock`` (Converse API), ``scripted`` (tests)."""
