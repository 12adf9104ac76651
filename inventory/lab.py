"""pyinfra inventory for the Vagrant lab named by KUBELAB_FILE (default: lab.yaml).

    pyinfra inventory/lab.py deploys/<deploy>.py

Hosts and groups (`control_plane`, `workers`) come from the lab definition; SSH details are the ones
`./lab up` recorded. For machines that are not Vagrant VMs, see inventory/ssh-example.py.
"""

import os

from labdef.lab import load_lab
from labkit.inventory import recorded_groups

_groups = recorded_groups(load_lab(os.environ.get("KUBELAB_FILE")))
control_plane = _groups["control_plane"]
workers = _groups["workers"]
