"""ovnk Layer2 topology: one logical switch per network spanning every node."""
