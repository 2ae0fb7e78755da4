"""Data access: the only fmquality code that talks to AWS. Every class takes its boto3 client as
``boto3_client=None`` and creates a default one only when constructed, never at import."""
