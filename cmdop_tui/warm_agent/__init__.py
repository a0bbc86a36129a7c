"""The warm agent: a per-user process that has imported the model SDK and the session, waiting
on a Unix socket to run `cmdop-tui -p ...` without the ~1.5 s of imports (the client and the
protocol are in `support/warm.py`).

Three processes per run, all forks of the agent:

* the agent accepts a connection, checks the peer's uid, that its code is still the code on disk
  (`CodeWatch`; changed code: it answers "stale" and leaves at once, the client runs cold and
  starts a fresh agent), the interpreter's compatibility, and that the command line is headless;
  then it forks a supervisor and goes back to waiting. It never starts a thread, an event loop or
  an HTTP client, so a fork of it is safe.
* the supervisor forks the run, tells the client "ok", forwards the client's signals to the run's
  process group, and reports its exit code. When the client goes away (killed, ssh closed) it
  sees EOF and ends the run: TERM to its group, KILL after a grace. Nothing outlives its client.
* the run: its own session, the client's fds on 0/1/2, its cwd, umask, environment, sys.path and
  stdio encodings, then the normal `cli.main(argv)`: settings, the API key, the client are all
  made fresh, as in a cold start.

The agent leaves after an idle time (CMDOP_TUI_WARM_IDLE_S, default 15 min) or on SIGTERM.
"""

from .agent import CodeWatch, serve

__all__ = ["CodeWatch", "serve"]
