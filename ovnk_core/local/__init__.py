"""The local cluster (``ovnk local``): the API server, OVN databases, and stand-ins for
the Kubernetes components ovnk needs around it (scheduler, kubelet, EndpointSlice
controller), each run as its own process."""
