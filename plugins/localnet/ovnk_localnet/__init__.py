"""ovnk Localnet topology: a logical switch bridged to a physical network."""
