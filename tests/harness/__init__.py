"""Test harness for real components: kube-apiserver + etcd, Ray head, pytest fixtures."""
