"""The one base class for failures a user can fix (bad input, a missing tool, a failed step).

The verbs print such an error as one message and exit 2, never as a traceback; each subclass's message
names the field, file, node or tool and says what to do.
"""


class UserError(Exception):
    """A failure the user can fix; its message says how."""
