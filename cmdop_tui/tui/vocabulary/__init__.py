"""What widgets, screens and the app all speak: loop events as Textual messages, the UI's record
of each tool call, and where a streamed Markdown reply splits into blocks.

Nothing here imports the app, a screen or a widget, so every other part of the TUI can import it.
"""
