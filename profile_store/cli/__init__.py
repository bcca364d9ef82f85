"""The command lines: ``profiles`` (``main``) with one module per command group, and the
programs of the servers this project runs in the foreground (the gateway, ``launchers``).

``conventions`` is what every command shares (exit codes, ``--json``, the HBase flags, one
handling of HBase and lake failures); ``argument_types`` the values their options take.
"""
