"""The Kubernetes release this server emulates, and ``GET /version``.

It is the release upstream OVN-Kubernetes tests against (its CI's kind node
image and its vendored ``k8s.io`` modules at the snapshot ovnk follows):
the messages of its validation (a failed CEL rule prints a scalar's value,
since 1.35), the fields its Go types always serialize (``gotypes``) and the
version clients see are that release's.
"""

from __future__ import annotations

from ovnk_local.apiserver.errors import JSON

KUBERNETES_VERSION = (1, 36, 2)
GIT_VERSION = "v{}.{}.{}+ovnk".format(*KUBERNETES_VERSION)


def version_info() -> JSON:
    """The ``version.Info`` document of ``/version``."""
    major, minor = str(KUBERNETES_VERSION[0]), str(KUBERNETES_VERSION[1])
    return {"major": major, "minor": minor, "emulationMajor": major, "emulationMinor": minor,
            "minCompatibilityMajor": major, "minCompatibilityMinor": str(KUBERNETES_VERSION[1] - 1),
            "gitVersion": GIT_VERSION, "gitCommit": "", "gitTreeState": "clean",
            "buildDate": "2026-06-01T00:00:00Z", "goVersion": "python3", "compiler": "cpython",
            "platform": "linux/amd64"}
