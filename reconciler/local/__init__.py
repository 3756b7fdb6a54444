"""Local backend: runs compiled launcher commands on this machine."""
