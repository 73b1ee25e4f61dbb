"""Node-side helpers: network namespaces, nftables (libnftables) and netlink (pyroute2)."""
