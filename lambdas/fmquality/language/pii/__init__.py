"""Personal data the redaction replaces, one module per family of kinds, each holding its patterns
and its finder: ``orders`` (order ids), ``contact`` (e-mail, IP addresses, phones), ``numbers``
(cards, My Number, passports), ``places`` (dates of birth, postal codes, addresses), ``names``.
``detect`` fixes the order the kinds claim spans in and their tokens; ``common`` holds what the
finders share (width normalization, ASCII boundaries, check digits). The Redactor that applies them
to text, turns and records is ``production/redact.py``.
"""
