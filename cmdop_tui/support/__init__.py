"""Support code every layer may use: inert text, secrets, child processes."""
