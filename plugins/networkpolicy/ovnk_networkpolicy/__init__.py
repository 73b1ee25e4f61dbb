"""NetworkPolicy as OVN port groups, ACLs and address sets, named as upstream names them."""
