"""Measuring the app: slider latency in Chromium, the live re-route benchmark, concurrent visitors."""
