"""Kubernetes access: a generic resource client, informers, level-driven controllers,
the retry policy, events, status conditions and leader election."""
