"""fmquality: the FM output quality gate core (pure Python, no AWS client created at import)."""

__version__ = "0.1.0"
