"""ovnk Layer3 topology: one logical router per network and one switch per node."""
