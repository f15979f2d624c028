"""The candidates database: every candidate and evaluation of every run, good or bad.

SQLite file by default, PostgreSQL URL for runs spread over machines. Imports only
``design_space``; ``Store`` methods take and return ``design_space`` values.
"""

from candidates_db.migrations import migrate
from candidates_db.schema import SCHEMA_VERSION
from candidates_db.store import Store

__all__ = ["SCHEMA_VERSION", "Store", "migrate"]
