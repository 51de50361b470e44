"""Alembic environment: always run programmatically by engine.db on a live connection."""

from __future__ import annotations

from alembic import context

# Importing the model modules registers their tables on the shared metadata.
import engine.memory.history
import engine.sessions.models
from engine.db import Base

for row_class in (engine.memory.history.MemoryEventRow, engine.sessions.models.MessageRow):
    assert row_class.__tablename__ in Base.metadata.tables

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
