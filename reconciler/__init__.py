"""ftspec.reconciler."""
