"""Machines: the local one and remote ones reached with the OpenSSH client."""
