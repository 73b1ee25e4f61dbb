"""OVN access: Northbound client, ownership of rows, the declarative apply layer,
and the OVN processes (ovsdb-server, ovn-northd) that tests and ``ovnk local`` run."""
