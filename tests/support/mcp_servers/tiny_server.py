"""The smallest MCP server: the protocol by hand with the standard library only (no SDK), over
stdio, with one read-only tool, `echo` (`--tools N`: N of them, `echo_2`... after it). Starts in
about 20 ms, where a server written with the SDK takes about half a second of CPU;
bench/bench_mcp.py starts twenty of these to measure what connecting costs the client, not what
importing the SDK costs each server; bench/bench_mcp_first_request.py five with ten tools each."""

import json
import sys

TOOLS = [
    {
        "name": "echo",
        "description": "Say the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": True},
    }
]


def offer(count: int) -> None:
    """Offer `count` tools: `echo`, then `echo_2`, `echo_3`... (each says the text back)."""
    TOOLS[1:] = [{**TOOLS[0], "name": f"echo_{n}"} for n in range(2, count + 1)]


def answer(message: dict) -> dict | None:
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message:
        return None  # a notification (initialized, cancelled)
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "tiny", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") in {tool["name"] for tool in TOOLS}:
        text = str((params.get("arguments") or {}).get("text", ""))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    if "--tools" in sys.argv:  # --tools N: offer N tools
        offer(int(sys.argv[sys.argv.index("--tools") + 1]))
    for line in sys.stdin:
        if line.strip():
            reply = answer(json.loads(line))
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
