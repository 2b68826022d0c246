"""Pokna: the Huttese dice game of Vigo's Favor as a provably fair REST service."""

__version__ = "0.1.0"
