"""The bottom layer every other part reads: the lab definition (`labdef.lab`), template rendering over
templates/ (`labdef.render`) and the one base class for failures a user can fix (`labdef.errors`).

It imports nothing from `labkit` (the host-side glue) or `deploys` (the pyinfra deploys); both import it.
"""
