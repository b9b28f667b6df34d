"""Deliberately broken setups, each a pytest plugin loaded into an inner run of one suite scenario.

A sabotage plugin implements the ``pytest_kbc_mutate_object`` hook (``kbc.plugins.hooks``): it
sees every object the scenario creates, just before it is sent, and breaks one thing in
it, such as the quota the scenario asks for, so that the scenario meets the broken
behaviour and must fail with a message that explains it.
"""
