"""The Kubernetes backend: TrainJob / RayJob (and their ConfigMaps, runtimes) on a cluster."""
