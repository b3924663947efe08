"""agents: code that runs inside the clusters (stdlib only, mounted from ConfigMaps), not in Pulumi.

A pod runs an agent as a script (`python3 /opt/karmada-hub/<agent>.py`), so the script's directory is first on
sys.path and the helpers shipped beside it in its ConfigMap are imported as top-level modules
(`import _incluster`). Importing an agent as `agents.<name>` (tests, simulators) puts this directory on
sys.path too, so the same import finds the same file.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.append(_HERE)
