"""Tab 4, About the numbers: what is measured, what is modelled, and every metric's definition."""

from __future__ import annotations

import gradio as gr

import core.metrics as core_metrics
from core.limits import MAX_GAMMA, MAX_NEW_TOKENS, MAX_PROMPT_CHARS

ABOUT = f"""
## Two kinds of numbers, never mixed

**Modelled accelerator (blue cards, "modelled" in every label).** On a GPU at decoding batch sizes a forward
pass costs about the weights it reads, almost regardless of how many tokens it scores. The cost model charges
each call the share of the full model's weights its route runs: plain decoding costs exactly 1 unit per token,
and *modelled speed-up* = tokens / units. This is what the routing decisions would buy on an accelerator. It is a
model, not a measurement.

**Measured wall clock (orange cards, "measured").** Seconds on this machine's CPU. A CPU scores several tokens at
once at roughly the price of two single passes, so measured speed-ups here are smaller than modelled ones.
Measured numbers are only shown when every forward pass really ran: threshold changes replay predictions from a
memo (same tokens, instantly), which makes their wall clock meaningless. Press **Re-run for real timing** to
measure the current settings honestly.

**Fidelity (green cards, measured).** How far tiers 1 and 2 moved the text away from the full model: *agreement*
is the share of tokens that are the full model's own top choice given the text so far; *common prefix* counts
tokens identical to the full model's plain output; *NLL* is the full model's surprise at the text.

## Metric definitions
```
{(core_metrics.__doc__ or "").strip()}
```

## Limits and tips
* Prompts up to {MAX_PROMPT_CHARS:,} characters; up to {MAX_NEW_TOKENS} new tokens; draft length gamma up to
  {MAX_GAMMA}. Thresholds must satisfy τ_slim ≤ τ_accept (a threshold of 1.0 switches its tier off).
* One run at a time uses the model; other requests wait in the queue. **Stop** ends a run after its current round.
* Every chart has a camera icon in its top-right toolbar: click it to download the chart as a PNG.
  The trace itself downloads as CSV (tokens, rounds) and JSON below the charts.
"""


class AboutTab:
    """Static text: the two kinds of numbers, the metric definitions, limits and tips."""

    def __init__(self) -> None:
        gr.Markdown(ABOUT)
