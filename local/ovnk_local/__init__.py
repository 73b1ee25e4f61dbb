"""ovnk-local: the development distribution of ovnk — a whole cluster on one machine.

Not part of a production install of ``ovnk-core``: the core imports nothing of it.
It carries what a real cluster has around ovnk and a development machine lacks:

* ``apiserver``: a local Kubernetes API server (``python -m ovnk_local.apiserver``)
  that runs ovnk's admission rules through the core's ``ovnk.admission`` entry
  points (``ovnk_core.admission.contract``);
* ``ovnk local`` (``cli``, subcommand of ``ovnk`` through the ``ovnk.cli`` entry
  point): the API server, OVN databases, stand-ins for the Kubernetes components
  ovnk needs around it (``scheduler``, ``kubelet``, ``endpointslices``), the ovnk
  components with the flags given to ``ovnk local up``, and per node a real
  dataplane (``dataplane``), each its own process under a supervisor
  (``cluster``, ``components``, ``credentials``, ``state``, ``supervision``,
  ``supervisor``);
* ``testing``: the ``ovnk-local`` pytest plugin (``kube_apiserver``, ``kube_client``,
  ...) and the in-process control plane on the local API server.
"""
