"""The version, in the lowest layer so that every layer may print it."""

VERSION = "0.1.0"
