"""`./lab ui`: a live placement page over the lab's cluster (server.py), read-only; its node grid and pending
groups also draw into static reports (overview.py)."""
