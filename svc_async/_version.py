__version__ = "0.1.0"
"""The installed version of ``svc-async`` (``MAJOR.MINOR.PATCH``; see the versioning policy)."""
