"""Code that runs inside training jobs, apart from the compile-time code that writes them.

``ftspec.runtime`` is what a job's container or Ray node imports (``python -m
ftspec.runtime.hf_sft``, ``python -m ftspec.runtime.ray_nodes``) or runs as text
(``unpack.UNPACK``). It imports nothing else of ftspec, so an image needs only this package's
own dependencies at run time. Compile-time code imports only its contract modules (the
formats both sides must agree on: ``ray_nodes.wire``, ``unpack``), which use the standard
library alone.
"""
