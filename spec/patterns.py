"""String forms the schema enforces, each with the words a message uses to explain it.

The models use these constants as ``pattern=``; the schema check looks the pattern up here
to say what form was expected instead of printing a regular expression.
"""

from __future__ import annotations

URI = r"^[A-Za-z][A-Za-z0-9+.-]*://.+$"
"""``scheme://rest``: hf://, s3://, gs://, pvc://, file://, http(s)://."""
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A DNS-1123 subdomain (at most 253 characters): the name of most Kubernetes objects."""
SPEC_ID = r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"
FUNCTION_REF = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"
MODULE = r"^[A-Za-z_][\w.]*$"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
HTTP_URL = r"^https?://.+$"
QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|M|G|T)?$"
LABEL_KEY = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
"""A Kubernetes label or annotation key: an optional DNS-subdomain prefix and ``/``, then a
name of at most 63 characters."""
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"

EXPLAINED: dict[str, tuple[str, str]] = {
    # pattern: (what is expected, an example)
    URI: ("a URI of the form scheme://path", "hf://org/name, s3://bucket/key or pvc://claim/path"),
    DNS_LABEL: (
        ("a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a "
        "letter or digit"),
        "ml-team",
    ),
    DNS_SUBDOMAIN: (
        ("a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending "
         "with a letter or digit"),
        "llama-lora.v2",
    ),
    SPEC_ID: (
        ("lowercase letters, digits, '-', '_' and '.', starting and ending with a letter or "
        "digit"),
        "llama-lora.v2",
    ),
    FUNCTION_REF: ("a Python function reference module:function", "my_prompts:samsum"),
    MODULE: ("a dotted Python module name", "my_pkg.train"),
    ENV_NAME: ("an environment variable name", "HF_TOKEN"),
    HTTP_URL: ("an http:// or https:// URL", "http://127.0.0.1:8265"),
    QUANTITY: ("a Kubernetes quantity", "8, 500m or 64Gi"),
    LABEL_KEY: (("a Kubernetes label key: an optional DNS prefix and '/', then at most 63 "
                 "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
                "team or example.com/team"),
    LABEL_VALUE: (("a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', "
                   "starting and ending with a letter or digit (or empty)"), "nlp"),
}
