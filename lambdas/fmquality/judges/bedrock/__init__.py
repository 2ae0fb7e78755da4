"""The Bedrock judge: Converse with a forced ``record_verdict`` tool call.

- ``judge.py``: ``BedrockJudge``, the client, the request it sends, retries and the one re-ask;
- ``prompts.py``: the prompt assembly (system text, user text with the case fenced once, re-ask note);
- ``schema.py``: the ``record_verdict`` tool schemas and the numbered levels;
- ``reply.py``: reading a reply into validated verdicts, usage and the kept raw text;
- ``guidance.py`` with ``data/guidance.yaml`` (the prose of the prompts) and ``data/casebook.yaml``
  (the calibration examples, typed and checked against the profile's sub-scores).

The level descriptions of each sub-score live in the profile (``datasets/profiles/<name>.yaml``).
"""
