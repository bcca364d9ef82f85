"""The numeric and date settings read from the environment: one definition each (name, type,
range, default, meaning), read by the library, checked at once when a command, the service or
the code location loads, and listed in docs/configuration.md."""
