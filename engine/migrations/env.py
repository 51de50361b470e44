"""Alembic environment: always run programmatically by engine.db on a live connection."""

from __future__ import annotations

from alembic import context

import engine.memory.history  # noqa: F401  (registers its tables on the metadata)
from engine.db import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
