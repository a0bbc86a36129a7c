"""The full-screen Textual app."""
