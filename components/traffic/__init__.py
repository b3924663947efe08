"""Traffic: a health-checked load balancer per region and the fleet's one external-dns on the hub."""
