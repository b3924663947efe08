"""agents: code that runs inside the clusters (stdlib only, mounted from ConfigMaps), not in Pulumi."""
