"""The claims layer: an answer read into what it claims, each claim tied to what it is about.

Above ``language`` (words, numbers, negation), below ``scoring`` and ``schemes`` (the checks that
score claims). One text is read once (``reading.Reading``: spans, product mentions, ``attach``); each
kind of claim has one module:

- ``commerce``: prices with their roles and products, stock statuses; the price and amount checks
  (roles in ``money``, arithmetic in ``arithmetic``);
- ``policy``: policy numbers (return window, refund time, thresholds, fees) and their comparison;
- ``orders``: order status, ids, carriers and dates against the page's orders;
- ``ordinals``: "the second one" resolved against the last list;
- ``grader_address``: text addressed to whoever grades the answer.

What no module here can read completely is left to the judge; each module's docstring says what.
"""
