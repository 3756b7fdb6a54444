"""What kubelet does to a container's command and args before the process sees them."""

from __future__ import annotations


def kubelet_expand(text: str, env: dict[str, str] | None = None) -> str:
    """Kubernetes' expansion of container command/args: ``$(VAR)`` from env, ``$$`` -> ``$``
    (k8s.io/kubernetes third_party/forked/golang/expansion)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(" and ")" in text[i + 2:]:
                end = text.index(")", i + 2)
                name = text[i + 2:end]
                out.append((env or {}).get(name, text[i:end + 1]))
                i = end + 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)
