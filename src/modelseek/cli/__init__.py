"""The ``modelseek`` command line. One module per command group; each defines ``register(subparsers)``."""
