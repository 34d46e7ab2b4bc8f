"""TRUSTED: the inspection worker process reads a build's exported programs (hostile bytes) and reports on them."""
