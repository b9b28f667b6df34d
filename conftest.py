"""Load the harness plugin; nothing else lives here."""

pytest_plugins = ["kbc.plugin"]
