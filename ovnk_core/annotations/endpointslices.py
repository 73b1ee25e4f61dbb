"""The labels and annotations of EndpointSlices, a user-defined network's included
(upstream's names, exactly).

A default-network slice (Kubernetes') carries ``kubernetes.io/service-name``; the copy
of it that lists a user-defined network's addresses carries ``k8s.ovn.org/service-name``
instead (so that kube-proxy ignores it) and annotations naming its source slice, that
slice's resourceVersion and the network.  The services controller selects endpoints by
them; the feature that writes the copies writes them.
"""

from __future__ import annotations

MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
DEFAULT_CONTROLLER = "endpointslice-controller.k8s.io"
UDN_SERVICE_NAME_LABEL = "k8s.ovn.org/service-name"
SOURCE_ANNOTATION = "k8s.ovn.org/source-endpointslice"
SOURCE_VERSION_ANNOTATION = "k8s.ovn.org/source-endpointslice-version"
NETWORK_ANNOTATION = "k8s.ovn.org/endpointslice-network"
