"""The UDN/CUDN section a topology plugin owns: its schema, its rules, its NAD keys.

A ``UserDefinedNetwork`` names its topology in ``spec.topology`` and carries
that topology's settings in one section, ``spec.<key>`` (a
``ClusterUserDefinedNetwork``: ``spec.network.topology`` and
``spec.network.<key>``).  Which values ``topology`` may take, what each
section may contain, how it is checked at apply time and what it renders into
the NetworkAttachmentDefinition all come from the topology plugins: a
``Topology`` class offers its section as ``Topology.udn_section``, an instance
of a ``UdnSection`` subclass.  The core keeps only what every section shares:

* the ``topology`` field (required, one of the loaded sections' values,
  immutable), and the rule that the section of the chosen topology is present
  and every other loaded section absent ("spec.<key> is required when
  topology is <Topology> and forbidden otherwise");
* the CUDN's ``namespaceSelector``, ``uplinks`` and transport fields
  (``transport``, ``noOverlay``, ``evpn``), whose topology-dependent rules
  read ``transports`` and ``evpn_vrfs`` below;
* the NAD's common keys: ``cniVersion``, ``type``, ``name``,
  ``netAttachDefName``, ``topology`` (``netconf_topology``), ``role`` (the
  section's ``role`` in lower case), ``mtu`` and ``joinSubnet`` (every primary
  network).

So a cluster whose configuration loads no plugin for a topology rejects a
network of that topology when it is applied, instead of accepting a network
nobody renders: the generated CRDs (``ovnk_core.manifests.crds``) list only
the loaded sections, and the admission rules (``ovnk_core.udn.admission``)
say which plugin is missing.

Every section has a ``role`` field (``Primary``/``Secondary``, the CRD's
spelling; ``PRIMARY`` and ``SECONDARY`` here), which the core reads for the
common keys and the transport rules.  Building blocks for schemas
(``ovnk_core.manifests.crd_schemas``), checks (``ovnk_core.udn.section_checks``)
and rendering (``ovnk_core.udn.nad``) are shared by the bundled sections and
free to use.  This module imports no controller: a plugin may import it at
module level.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar

from ovnk_core.admission.field_errors import FieldError

if TYPE_CHECKING:
    from ovnk_core.config import Config

JSON = dict[str, Any]

PRIMARY = "Primary"
"""The CRD's ``role`` of a primary network (the NAD's ``primary``)."""

SECONDARY = "Secondary"
"""The CRD's ``role`` of a secondary network (the NAD's ``secondary``)."""

NO_OVERLAY = "NoOverlay"
"""``spec.network.transport`` of a CUDN routed without an overlay (``spec.noOverlay``)."""

EVPN = "EVPN"
"""``spec.network.transport`` of a CUDN carried over EVPN (``spec.evpn``)."""

TRANSPORTS = (NO_OVERLAY, EVPN)
"""Every non-default transport, in the order of upstream's enum and rules."""

MAC_VRF = "macVRF"
"""The layer-2 VRF of ``spec.network.evpn``."""

IP_VRF = "ipVRF"
"""The layer-3 VRF of ``spec.network.evpn``."""


class UdnSection(abc.ABC):
    """One topology's section of the UDN and CUDN specs (abstract: subclass it).

    Instances are stateless and shared; the class attributes describe the section, the
    methods check and render it.  A plugin sets an instance as its ``Topology``'s
    ``udn_section`` class attribute::

        class FlatSection(UdnSection):
            topology = "Flat"
            key = "flat"
            ...

        class FlatTopology(Topology):
            name = "flat"               # == FlatSection.netconf_topology
            udn_section = FlatSection()

    :cvar topology: the ``spec.topology`` value that selects this section (``"Flat"``).
        Lower-cased it is the netconf ``topology`` of the NADs rendered from it
        (upstream's rule), so it must be the owning ``Topology.name`` in lower case, else
        loading the plugins fails (``PluginLoadError``).
    :cvar key: the spec field holding the section (``"flat"``).
    :cvar namespaced: whether a namespaced ``UserDefinedNetwork`` may use the topology;
        ``False``: only a ``ClusterUserDefinedNetwork`` may (its UDN ``topology`` enum
        leaves it out).
    :cvar transports: the non-default ``transport`` values (``TRANSPORTS``) a primary
        network of this topology may use; no other network may use one.
    :cvar evpn_vrfs: for an EVPN network of this topology, ``(vrf, required)`` pairs:
        ``spec.network.evpn.<vrf>`` (``MAC_VRF``, ``IP_VRF``) must be set (``True``) or
        must not be (``False``).  Checked in this order.
    :cvar crd_position: where the section goes among the others, ascending (ties: by
        ``topology``): its schema property, its "required when" rule, its place in the
        transport rules, and the order the admission rules check sections in.  The
        bundled sections keep upstream's order of its three sections (10, 20, 30); the
        default puts a new section after them.
    """

    topology: ClassVar[str]
    key: ClassVar[str]
    namespaced: ClassVar[bool] = True
    transports: ClassVar[frozenset[str]] = frozenset()
    evpn_vrfs: ClassVar[tuple[tuple[str, bool], ...]] = ()
    crd_position: ClassVar[int] = 100

    @property
    def netconf_topology(self) -> str:
        """The NAD's ``topology`` (``topology`` in lower case), the owning plugin's name."""
        return self.topology.lower()

    @abc.abstractmethod
    def schema(self) -> JSON:
        """The OpenAPI v3 schema of the section (``spec.<key>``), as a CRD carries it.

        **When:** each time the CRDs are generated (``ovnk_core.manifests.crds``), for the
        UDN (when ``namespaced``) and the CUDN alike.  Must be pure.

        :returns: a JSON-compatible dict: ``type: object``, its ``required`` fields and
            ``properties``, and its ``x-kubernetes-validations`` with upstream's CEL rules
            and messages — immutability included (``self == oldSelf`` on a field, or
            ``crd_schemas.immutable`` on the whole section).  Build it from the pieces of
            ``ovnk_core.manifests.crd_schemas`` (``cidr``, ``dual_stack_cidrs``, ``role``,
            ``mtu``, ``ipam``, ``cel``, ...).
        """

    @abc.abstractmethod
    def validate(self, section: JSON, old: JSON | None, path: str) -> list[FieldError]:
        """Every rule of ``schema()`` for one section, with the messages a real API server
        prints for it.

        **When:** at apply time, in the admission rules of an API server that does not
        evaluate CEL (``ovnk_core.udn.admission``), on CREATE and UPDATE of a UDN/CUDN of
        this topology, after the core checked ``topology`` and that only this section is
        present.  Must be pure.

        :param section: the section (``spec[.network].<key>``), a dict.
        :param old: the section before an UPDATE (a dict), ``None`` on CREATE or when the
            old object had none: the immutability rules apply only when it is given.
        :param path: the field path of the section (``spec.flat``,
            ``spec.network.flat``), the prefix of every error's field.
        :returns: the failures, in the order the schema declares its rules (``[]``: the
            section is valid).  Each is a ``FieldError`` worded as kube-apiserver words
            that kind of rule (``ovnk_core.admission.field_errors``: a failed CEL rule prints
            the node's value when it is a scalar and none for an object or array, a failed
            keyword its value); use the checks of
            ``ovnk_core.udn.section_checks``.  Must not raise on malformed input: report it.
        """

    @abc.abstractmethod
    def render(self, section: JSON, role: str, config: Config) -> JSON:
        """The section's keys of the NAD's CNI config.

        **When:** in the cluster manager, each time a UDN/CUDN of this topology is
        reconciled, for every NAD it renders (``ovnk_core.udn.nad.build_cni_config``).
        Must be pure.

        :param section: the section, as admitted (``validate`` passed).
        :param role: the netconf role: ``primary`` or ``secondary``.
        :param config: the cluster manager's configuration (feature flags such as
            ``enable_persistent_ips``).
        :returns: the keys this topology adds, in the order they are written (e.g.
            ``subnets``); the common keys (module doc) are the core's and win over a key
            of the same name.
        :raises NetworkConfigError: the section cannot be rendered with this configuration;
            the message becomes the ``NetworkCreated=False`` condition of the UDN/CUDN and
            no NAD is written.
        """

    def ignored_fields(self, section: JSON, config: Config) -> str | None:
        """What ``render`` leaves out of the NAD with this configuration although the
        section sets it (a field whose feature flag is off), said in a sentence that names
        the fields and the flag; ``None`` (the default): nothing is left out.

        **When:** in the cluster manager, after the UDN/CUDN's NADs are rendered (the
        network is created as upstream creates it, without those fields).  Must be pure.

        :param section: the section, as admitted (``validate`` passed).
        :param config: the cluster manager's configuration.
        :returns: the message of a Warning event ``FieldsIgnored`` on the UDN/CUDN (once
            per message; ``NetworkCreated`` is unchanged), so no field is dropped without a
            word.
        """
        return None

    def default_mtu(self, config: Config) -> int | None:
        """The NAD's ``mtu`` when the section sets none; ``None`` (the default): the key is
        left out and the network gets its topology's default when the NAD is parsed."""
        return None

    def supports_transport(self, transport: str, role: Any) -> bool:
        """Whether a network of this topology with CRD ``role`` may use ``transport``
        (derived from ``transports``: primary networks only)."""
        return role == PRIMARY and transport in self.transports


__all__ = ["EVPN", "IP_VRF", "JSON", "MAC_VRF", "NO_OVERLAY", "PRIMARY", "SECONDARY",
           "TRANSPORTS", "FieldError", "UdnSection"]
