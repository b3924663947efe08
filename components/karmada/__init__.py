"""The Karmada control plane on the hub: PKI, etcd, components and their flags, bootstrap and CRDs."""
