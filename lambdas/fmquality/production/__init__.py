"""Production watch: capture of real shoppers' turns (``capture``), redacted before anything is stored
(``redact``, with what counts as personal data in ``pii/``), stratified samples (``sample``), drift
against a reference period (``drift``; the CUSUM and KS statistics are ``stats/``), the monitor
status of a sampled run (``monitor``) and the metrics of both (``metrics``), and the human review
queue: which items (``review``), the spreadsheet export and verdict import (``review_exchange``) and
the judge's agreement with the reviewers (``review_agreement``); the queue's stores are
``adapters/review_queue.py``. Pure Python like the rest of the core: AWS clients are passed in."""
