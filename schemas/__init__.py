"""Data package: the committed JSON Schema (ftspec.schema.json)."""
