"""The process kubelet: the pods of a rendered plan run as local processes, as a kubelet would run them.

Test support only. `network.Network` gives every pod its own network namespace and address on one bridge, the
cluster's names in each namespace's `/etc/hosts`, and Service ClusterIPs with a small TCP proxy where a Service maps
ports. `pod.Kubelet` runs a pod: volumes (Secret, ConfigMap, projected service-account tokens, downward API,
emptyDir, a PVC's directory) written and bind-mounted at their mount paths in the container's own mount namespace,
the downward-API env, `$(VAR)` expansion, init containers (native sidecars too), probes executed, restarts with the
kubelet's back-off and counted. `images.ImageTable` maps each rendered image to the upstream binary that image
ships. Everything made (processes, namespaces, addresses, files, mount points) is removed by `close()`, also on
failure or Ctrl-C; `reap_stale()` removes what a killed earlier run left behind.
"""
