"""Locations by URI, in one place: the spec's ``scheme://rest`` locations taken apart, and
whether an http(s) URL is usable as a service address.

Spec locations (``hf://org/name``, ``pvc://claim/path``, ``file://path``, ``s3://…``) are
split here and nowhere else (``scheme``, ``rest``, ``hub_id``, ``hub_parts``, ``pvc_parts``).
``urllib.parse`` is not used for them: it would read ``file://data/x.json``'s ``data`` as a
host and lower-case a hub id's organisation, and these are paths, not network locations.
``url_problem`` does use it for service addresses; the checks it does not make (an empty or
over-long host label, a port out of range, spaces, an unclosed IPv6 bracket) are made here, so
a bad address is a located error at validate time instead of an exception deep in
``http.client``.
"""

from __future__ import annotations

import re
import urllib.parse

_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
SEPARATOR = "://"


def is_uri(value: str) -> bool:
    """Whether ``value`` names a location by scheme (else it is a plain path)."""
    return SEPARATOR in value


def scheme(uri: str) -> str:
    """``uri``'s scheme, lower-cased (``hf``, ``pvc``, ``file``, ``s3`` …); "" for a plain
    path."""
    head, sep, _ = uri.partition(SEPARATOR)
    return head.lower() if sep else ""


def rest(uri: str) -> str:
    """What follows ``scheme://`` (the whole value for a plain path)."""
    head, sep, tail = uri.partition(SEPARATOR)
    return tail if sep else head


def hub_parts(uri: str) -> tuple[str, str]:
    """``hf://org/name/rel/path`` -> (``org/name``, ``rel/path``); rel is "" for a repo."""
    parts = rest(uri).strip("/").split("/", 2)
    return "/".join(parts[:2]), parts[2] if len(parts) == 3 else ""


def hub_id(uri: str) -> str:
    """``hf://org/name/`` -> ``org/name``: everything after the scheme, without edge slashes."""
    return rest(uri).strip("/")


def pvc_parts(uri: str) -> tuple[str, str]:
    """``pvc://claim/sub/path`` -> (``claim``, ``sub/path``); sub is "" for the whole claim."""
    claim, _, sub = rest(uri).partition("/")
    return claim, sub


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
