"""`python -m ftspec.cli` runs the CLI."""

from ftspec.cli.main import main

raise SystemExit(main())
