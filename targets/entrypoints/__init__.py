"""Training entrypoints that compiled launcher commands run."""
