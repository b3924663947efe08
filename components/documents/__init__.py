"""Pure functions that render Kubernetes and Karmada objects as plain dicts (no Pulumi); components wrap them."""
