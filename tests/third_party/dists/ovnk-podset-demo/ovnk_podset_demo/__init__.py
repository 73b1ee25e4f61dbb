"""ovnk feature ``podset``, shipped outside ovnk: NB address sets of pod IPs, a host table."""
