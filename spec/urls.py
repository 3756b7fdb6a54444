"""Is an http(s) URL usable as a service address? One answer for the spec and the backends.

``urllib.parse`` splits the URL; the checks it does not make (an empty or over-long host
label, a port out of range, spaces, an unclosed IPv6 bracket) are made here, so a bad
address is a located error at validate time instead of an exception deep in ``http.client``.
"""

from __future__ import annotations

import re
import urllib.parse

_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as an ``http(s)://host[:port][/path]`` address, or None."""
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return "the URL holds spaces or control characters"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        return f"the URL cannot be parsed ({exc})"
    if parts.scheme not in ("http", "https"):
        return "the URL must start with http:// or https://"
    if parts.username is not None or parts.password is not None:
        return "the URL holds credentials"
    if not host:
        return "the URL has no host"
    if port is not None and port == 0:
        return "the port must be between 1 and 65535"
    if ":" in host:  # an IPv6 literal; urlsplit has checked the brackets
        return None
    if len(host) > 253:
        return "the host name is longer than 253 characters"
    for label in host.rstrip(".").split("."):
        if not _LABEL.match(label):
            return ("each part of the host name must be 1 to 63 letters, digits or '-' "
                    "(not starting or ending with '-')")
    return None
