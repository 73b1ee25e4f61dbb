"""The UDN API: validation of UserDefinedNetwork / ClusterUserDefinedNetwork objects,
rendering into NetworkAttachmentDefinitions, and the cluster-manager controllers."""
