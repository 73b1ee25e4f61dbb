"""OVN access: the Northbound writer and reader, ownership of rows, the declarative apply
layer, and the OVN processes (ovsdb-server, ovn-northd) that tests and ``ovnk local`` run."""
