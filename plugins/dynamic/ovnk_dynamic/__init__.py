"""ovnk dynamic UDN allocation: networks rendered only where pods use them."""
