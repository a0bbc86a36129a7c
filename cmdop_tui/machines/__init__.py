"""Machines: the local one and remote ones reached with the OpenSSH client.

machine.py   what the tools may ask of any machine (`Machine`) and what it answers (`MachineResult`)
local.py     this machine (`LocalMachine`); its file operations in local_files.py
remote.py    a machine over ssh (`RemoteMachine`), through ssh.py's transport
process.py   running a command as a child process: streamed, bounded, killed as a group
fleet.py     the machines of a session: `Fleet.machine(name)` picks one; inventory, health, spec
"""
