"""Webhooks: the tenants' endpoints, and the worker that delivers the outbox to them (Standard Webhooks)."""
