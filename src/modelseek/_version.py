"""The package version, in a module of its own so that any module may read it without importing the package's
top level (which imports most of modelseek)."""

__version__ = "0.1.0"
