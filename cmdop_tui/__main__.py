from cmdop_tui.cli import entry

entry()
