"""Fakes and builders shared by the tests and by replay."""
