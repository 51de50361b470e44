"""Layer 1: bounded memory — the store, its threat scanner, approval queue and change history."""
