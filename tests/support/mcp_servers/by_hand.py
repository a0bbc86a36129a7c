"""What the MCP servers written by hand (standard library only, over stdio) share: writing a
message, and the answers every one of them gives alike (initialize, tools/list, ping, and an
error for a method it does not know)."""

import json
import sys
import threading

LOCK = threading.Lock()


def send(message: dict) -> None:
    """One message on stdout, whole (threads answer too); nothing if the client has gone."""
    with LOCK:
        try:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass  # the client has gone: the work was done for no one


def answer_common(message: dict, name: str, tools: list[dict]) -> None:
    """Answer a request any server answers alike; an unknown method gets its error."""
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        result: dict = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": name, "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}})
        return
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
