"""ovnk UDN isolation: primary-UDN pods cut off from the default network."""
