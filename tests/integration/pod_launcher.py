"""One etcd pod's containers in order, as kubelet runs them: the init container, then etcd (exec).

argv: `<init command as a JSON list> <etcd binary> <etcd args...>`. etcd starts only if the init container
exits 0; otherwise this exits with the init container's code (kubelet would restart it with back-off)."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main() -> int:
    init = json.loads(sys.argv[1])
    main_cmd = sys.argv[2:]
    code = subprocess.call(init)
    if code != 0:
        print(f"pod-launcher: init container exited {code}; not starting etcd", file=sys.stderr, flush=True)
        return code
    os.execv(main_cmd[0], main_cmd)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
