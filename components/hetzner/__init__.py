"""The hub's own cluster on Hetzner: network, firewall, servers, API load balancer, k3s cloud-init, readiness gates."""
