"""Kubernetes helpers every domain uses: objects, pod security, quantities, YAML, kubeconfig, TLS, agent scripts."""
