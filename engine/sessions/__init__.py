"""Layer 2: every session stored whole, with full-text search over real messages."""
