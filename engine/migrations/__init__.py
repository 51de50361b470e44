"""Alembic migrations for Cairn's database. Every schema change is a new revision here."""
