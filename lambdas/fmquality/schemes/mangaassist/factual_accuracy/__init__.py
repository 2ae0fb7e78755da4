"""Factual accuracy: is every claim backed by the catalog, the retrieved knowledge and the page context?
``check.py`` runs the checks, one module per kind of claim (``commerce``: prices and stock; ``policy``:
policy numbers; ``attributes``: authors and volume counts; ``unsupported``: anything the evidence does
not carry); ``signal.py`` is the offline judge's reading of what they leave open."""

DIMENSION = "factual_accuracy"
