"""Recorded threshold sweeps: one prompt run live once, then re-routed over a threshold grid through the memo.

`grid` says which points a sweep holds and in what order they are computed (nearest first, the order the
app's background prefetch uses too); `codec` writes a trace compactly and reads it back; `record` computes
a sweep and reads and writes its file. The command is `python -m core.tools.record_sweep`.
"""
