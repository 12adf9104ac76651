"""Host-side glue for kubelab: lab definition, Vagrant driver, inventory, pyinfra runs, rendering, placement."""

__version__ = "0.1.0"
