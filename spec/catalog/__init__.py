"""Reference data the spec rules and the IR rely on: accelerators and model families."""
