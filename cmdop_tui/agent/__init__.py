"""The agent loop: a library with no UI in it. `runner.Runner` is its entry point."""
