"""Pods: the ``k8s.ovn.org/pod-networks`` annotation and the controller that allocates it."""
