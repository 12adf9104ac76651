"""`./lab ui`: a live placement page over the lab's cluster (server.py), read-only."""
