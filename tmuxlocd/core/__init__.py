"""The pure part: parsers, the model, the answers and every decision, without any I/O.

Imports only ``tmuxlocd.core``, the standard library and msgspec (tests/unit/test_import_rule.py).
"""
