"""cmdop-tui: a terminal operator that chats with an LLM doing real work on your machines."""

__version__ = "0.1.0"
