"""Pods: what a pod's ``k8s.ovn.org/pod-networks`` entries hold, the networks it asks for,
and its IP pools (the annotation itself is ``ovnk_core.annotations.pod_networks``)."""
