"""Page origins, as browsers send them in the websocket's Origin header."""

from __future__ import annotations

from urllib.parse import urlsplit


def origin_of(url: str) -> str:
    """scheme://host[:port], lower-cased, the default port left out (as browsers send it)."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None or (scheme, port) in (("http", 80), ("https", 443)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"
