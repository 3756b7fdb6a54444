"""ftspec.reconciler: plan / apply / destroy / status against live state (kubernetes, ray, local)."""
