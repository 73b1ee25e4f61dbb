"""Kubernetes Services as OVN load balancers, for the default network and every primary UDN.

One services controller serves every network (upstream's shared controller
with per-network registration): a Service belongs to the network of its
namespace, takes its endpoints from that network's EndpointSlices (the
mirrored ones on a user-defined network) and becomes ``Load_Balancer`` rows
in that network: cluster-wide ones in the network's ``clusterLBGroup``,
per-node ones (NodePort, host-network endpoints, traffic policy Local) on the
node's switch and gateway router, which the network's topology names.
"""
