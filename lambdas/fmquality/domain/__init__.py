"""The contracts between the parts: test cases, scores, results, reports and errors (pydantic)."""
