"""Tenants (integrating apps) and the API keys they authenticate with."""
