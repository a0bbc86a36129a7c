"""Machines: the local one and remote ones reached with the OpenSSH client.

machine.py     what the tools may ask of any machine (`Machine`) and what it answers (`MachineResult`,
               `SandboxRefusal`)
local.py       this machine's commands (`LocalMachine`); its file tools in local_fs.py, over
               local_rules.py, beneath.py, local_files.py, local_glob.py, local_writes.py
sandbox.py     the boundary a command is held to (bubblewrap.py, seccomp.py, sandbox_view.py,
               sandbox_state.py, secret_index.py, denials.py; landlock.py where bubblewrap cannot run)
remote.py      a machine over ssh (`RemoteMachine`), through ssh.py's transport; its sandbox in
               remote_sandbox.py
process.py     running a command as a child process: streamed, bounded, killed as a group
fleet.py       the machines of a session: `Fleet.machine(name)` picks one; inventory, health, spec
"""
