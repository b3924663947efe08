"""Day-two operations: etcd backups, the failover budget, the version-skew report, preflight checks."""
