"""ovnk EndpointSlice mirror: default slices mirrored with primary-UDN pod IPs."""
