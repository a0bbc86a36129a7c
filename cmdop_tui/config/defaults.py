"""What ships with cmdop-tui: the model aliases, the price table and the autonomous profile's
messages (its loop message and breakers follow Open Interpreter's voice-assistant profile).

Plain data only, so changing what ships never touches how settings are read."""

from __future__ import annotations

DEFAULT_ALIASES: dict[str, str] = {
    "@fast": "claude-haiku-5-5",
    "@balanced": "claude-sonnet-5-5",
    "@smart": "claude-opus-5-5",
}
# US dollars per million tokens: (input, output). Cache reads and writes are derived from these in agent/budget.py.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "claude-haiku-5-5": (1.0, 5.0),
    "claude-sonnet-5-5": (3.0, 15.0),
    "claude-opus-5-5": (5.0, 25.0),
}
AUTONOMOUS_LOOP_MESSAGE = (
    "Proceed with what you were doing (this is not confirmation, if you just asked me something). "
    "You CAN run commands on my machines with your tools. If the entire task is done, say exactly "
    "'The task is done.' If you need some specific information (like a hostname, a path or a "
    "password) say EXACTLY 'Please provide more information.' If it's impossible, say 'The task "
    "is impossible.' (If I haven't provided a task, say exactly 'Let me know what you'd like to do "
    "next.') Otherwise keep going. CRITICAL: REMEMBER TO FOLLOW ALL PREVIOUS INSTRUCTIONS."
)
AUTONOMOUS_BREAKERS = (
    "The task is done.",
    "The task is impossible.",
    "Let me know what you'd like to do next.",
    "Please provide more information.",
)
AUTONOMOUS_INSTRUCTIONS = (
    "Work autonomously: plan, act with your tools, check the result, and go on "
    "until the task is done. Ask only when you truly cannot go on without the user."
)
