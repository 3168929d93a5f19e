"""What runs in the user's process: the CLI, the HTTP clients, harness hooks, MCP, doctor.

Imports ``core``, ``host`` and ``clients``; never ``daemon`` (the CLI's ``serve`` entry
point excepted).
"""
