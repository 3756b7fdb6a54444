"""Ray backend: jobs on an existing Ray cluster through the Jobs API."""
