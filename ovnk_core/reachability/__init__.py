"""``ovnk reachability``: which pods can talk, answered by ovn-trace, shown as a matrix."""
