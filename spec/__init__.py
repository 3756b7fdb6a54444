"""ftspec.spec: the spec language (loading, diagnostics, model, rules, schema, IR types).

Imports nothing else of ftspec. Keep module imports light: ``ftspec validate`` runs on
every commit through the pre-commit hook.
"""
