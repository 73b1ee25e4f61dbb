"""Kubernetes manifests the project ships (CRDs), built by code and stored as YAML."""
