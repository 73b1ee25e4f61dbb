"""``ovnk webhook``: ovnk's admission rules as a validating admission webhook (upstream's
ovnkube-identity role).

A real kube-apiserver cannot run Python rules in-process; it calls webhooks.  This package
serves the rules registered through the ``ovnk.webhook`` entry points
(``admission.contract``; today the annotation rules of ``admission.annotations``) over
HTTPS as ``admission.k8s.io/v1`` AdmissionReviews: ``review`` is the protocol,
``endpoints`` which hooks answer at which path, ``server`` the HTTPS server.
"""
