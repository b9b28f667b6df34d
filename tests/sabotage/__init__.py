"""Deliberately broken setups, each a pytest plugin loaded into an inner run of one suite scenario.

A sabotage plugin breaks one thing in ``pytest_configure`` (before the suites are
imported), such as the quota the scenario asks for, so that the scenario meets
the broken behaviour and must fail with a message that explains it.
"""
