"""ftspec.compiler: spec model -> Job IR (derived values computed once) -> target artifacts."""
