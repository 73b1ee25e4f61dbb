"""ovnk's CNI plugin ``ovn-k8s-cni-overlay`` (upstream's binary name), per the CNI spec 1.1.

A separate top-level package of the core distribution, so that the binary a container
runtime executes for every pod imports only the standard library (``spec``, ``shim``) and
not ``ovnk_core`` with its plugin host.  The plugin forwards each call to the node agent
over its unix socket (``ovnk_core.node.cni_server``), which does the work.
"""
