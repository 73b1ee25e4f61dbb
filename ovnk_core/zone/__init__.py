"""The zone controller: renders networks, nodes and pods of one OVN zone into Northbound.

Upstream calls this component ovnkube-controller.  ``services`` turns
Kubernetes Services into OVN load balancers; ``model`` holds what a
topology plugin is given to render, ``owners`` who owns which rows,
``node_facts`` what nodes publish about themselves, ``networks`` the zone's
view of the networks (from NADs annotated by the cluster manager), and
``controller`` the level-driven reconciliation that applies it all.
"""
