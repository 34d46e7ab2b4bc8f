"""The whole CLI at once: every command module imported, so every command is registered on `bench.app.app`
(`python -m bench.cli ...`, and tests that drive `app`). The `bench` script (bench.app.main) imports only the
modules a command line needs."""

import importlib

from bench.app import COMMAND_MODULES, app, main

for _module in COMMAND_MODULES:
    importlib.import_module(_module)

__all__ = ["app", "main"]

if __name__ == "__main__":
    main()
