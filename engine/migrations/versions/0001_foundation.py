"""Foundation: Cairn's ownership marker and the memory change history.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cairn_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(256), nullable=False),
    )
    op.create_table(
        "memory_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("target", sa.String(16), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("entry_before", sa.Text),
        sa.Column("entry_after", sa.Text),
        sa.Column("state_before", sa.Text),
        sa.Column("state_after", sa.Text),
        sa.Column("origin", sa.String(32), nullable=False),
        sa.Column("session_id", sa.String(64)),
        sa.Column("pending_id", sa.String(16)),
        sa.Column("detail", sa.Text),
    )
    op.create_index("ix_memory_events_target_id", "memory_events", ["target", "id"])


def downgrade() -> None:
    op.drop_index("ix_memory_events_target_id", "memory_events")
    op.drop_table("memory_events")
    op.drop_table("cairn_meta")
