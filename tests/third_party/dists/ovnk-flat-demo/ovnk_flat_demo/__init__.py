"""ovnk topology ``flat``, shipped outside ovnk: one logical switch spanning every node."""
