"""Safety: whether the answer keeps the store's safety rules (binary and final)."""
