"""Typed contracts that cross plugin boundaries (DESIGN.md §3)."""
