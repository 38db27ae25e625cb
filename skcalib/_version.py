"""The version of skcalib, in a module that imports nothing, so that every
layer (the report's metadata too) can read it without the facade."""

__version__ = "0.1.0.dev0"
