"""The upstream binaries the tests run: built from their Go modules at the versions in components/versions.py.

Nothing here is part of the program. `python -m upstream.build` (`make upstream`) installs kube-apiserver,
kube-controller-manager, kube-scheduler, kubectl, the seven Karmada binaries the hub renders, etcd, etcdctl, kwok
and kwokctl into a cache outside the checkout; `upstream.build.binary(name)` finds one. The only Go files in the repo
are the two wrapper modules' `go.mod`/`go.sum` (`upstream/kube`, `upstream/etcd`), for the modules whose own
`go.mod` has `replace` lines and so cannot be `go install`ed by version.
"""
