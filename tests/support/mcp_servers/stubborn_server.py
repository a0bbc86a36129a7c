"""An MCP server that ignores cancellation: the protocol by hand with the standard library only,
over stdio, like tiny_server.py.

Its tool `stall` answers only after `seconds` (a thread of its own works on it), whatever the
client says meanwhile: `notifications/cancelled` is read and ignored, and an end of stdin does not
end the process while a call is still being worked on (a non-daemon thread), as a server busy
with a long job would. `--tag TEXT` marks the command line (tests find the process by it);
`$STUBBORN_MARK_FILE`, when set, is written `working` once a call has arrived. `--fork`: the
process started forks at once and leaves, its child (in its process group, holding its stdio)
serves, as a launcher that hands over to the real server does.
"""

import json
import os
import sys
import threading
import time

from by_hand import answer_common, send

TOOLS = [
    {
        "name": "stall",
        "description": "Answer after a while, whatever happens meanwhile.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
    }
]


def stall(request_id: object, seconds: float) -> None:
    time.sleep(seconds)
    send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "done"}]}})


def answer(message: dict) -> None:
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message:
        return  # a notification: initialized, and cancelled (ignored on purpose)
    if method == "tools/call" and params.get("name") == "stall":
        seconds = float((params.get("arguments") or {}).get("seconds", 60))
        threading.Thread(target=stall, args=(message["id"], seconds)).start()
        mark = os.environ.get("STUBBORN_MARK_FILE")
        if mark:
            with open(mark, "w") as file:
                file.write("working")
        return
    answer_common(message, "stubborn", TOOLS)


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            answer(json.loads(line))


if __name__ == "__main__":
    if "--fork" in sys.argv and os.fork() != 0:
        os._exit(0)
    main()
