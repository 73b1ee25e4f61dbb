"""The cluster manager: the single active process that owns cluster-wide decisions
(UDN → NAD rendering, network IDs, node subnets, pod IPAM for shared subnets)."""
