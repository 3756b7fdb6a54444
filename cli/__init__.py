"""ftspec.cli: the `ftspec` command. Parsing, rendering and exit codes only; no logic."""
