"""The language layer: English and Japanese text as the checks read it, with no notion of claims.

- ``text``: normalization, script, tokens, sentences and list lines, loose keys;
- ``numbers``: numbers, amounts, quantities, ranges, dates, ordinals, a text's currency;
- ``negation``: negation and its scope, conditions and exceptions, store conditions, questions;
- ``vocabulary``: the store's interchangeable words and the content words of a text;
- ``stock``: stock-status phrases and compatible statuses;
- ``catalog_index``: where catalog products are named, and telling listings that share a name apart;
- ``alignment``: sentences compared with sentences (fact coverage, grounding);
- ``japanese``: Japanese register by morphology.

Nothing here imports ``claims`` or any layer above it.
"""
