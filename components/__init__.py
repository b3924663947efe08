"""karmada-hub components, one package per domain of the data flow; imports only go down this list:

    versions.py    pinned versions and the compatibility matrix
    kube/          Kubernetes helpers every domain uses
    config.py      FleetConfig, the only place config is read
    hetzner/       the hub's k3s cluster on Hetzner
    karmada/       the Karmada control plane on it
    fleet/         members and tenant policies
    traffic/       regional load balancers and the fleet's DNS
    operations/    backups, failover budget, version skew, preflight
    trust/         who may reach and do what: NetworkPolicies, region identities and their RBAC
    roles.py       the stack roles that compose the rooms above

`tests/test_layout.py` reads every import and enforces the direction.
"""
