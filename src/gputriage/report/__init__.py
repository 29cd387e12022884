"""Renderers: terminal (rich), JSON, Markdown. They draw; they never compute."""
