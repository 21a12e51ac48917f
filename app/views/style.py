"""The app's CSS: readable in light and dark mode (WCAG AA, 4.5:1) and laid out as a cockpit.

Also here, so the cockpit never jumps: toasts (warnings) appear at the bottom right and at most two
at a time, never over the headline cards; the headline keeps a fixed one-line row for its progress
line, so a streaming status never pushes the sliders down; a help text under a slider's label takes
the label's whole row before the number box shares it, so it never wraps one word per line; and the
charts repaint in dark mode with the dark plotly template's colours (app.views.chart_style).

Bold text uses the theme font's complete bold face: the semi-bold face Gradio ships (and the default theme
declares for weight 600) is a small subset without most capitals, so a bold "A" fell back to another font.

Colours come from a few variables set for light mode and again under `.dark`, the class Gradio puts
on <body> both for `?__theme=dark` and when the browser prefers a dark scheme. Token colours are
tints (25 % alpha) of the Okabe-Ito palette over the page background, so the text colour carries
the contrast in both schemes, and every colour is paired with an underline style (the second cue).
"""

from app.views.chart_style import dark_css

CSS = """
@font-face {font-family: 'Source Sans Pro'; font-weight: 600; font-style: normal;
  src: url('static/fonts/SourceSansPro/SourceSansPro-Bold.woff2') format('woff2');}
@font-face {font-family: 'Source Sans Pro'; font-weight: 700; font-style: normal;
  src: url('static/fonts/SourceSansPro/SourceSansPro-Bold.woff2') format('woff2');}
:root {--viasd-fg: #111111; --viasd-bg: #ffffff; --viasd-muted: #474747; --viasd-border: #c4c4c4;
  --viasd-panel: #f6f6f6; --viasd-outline: #111111;}
.dark {--viasd-fg: #f2f2f2; --viasd-bg: #16161a; --viasd-muted: #c9c9c9; --viasd-border: #5a5a5a;
  --viasd-panel: #222228; --viasd-outline: #f2f2f2;}
.viasd-tokens, .viasd-tokens *, .viasd-legend, .viasd-legend *, .viasd-cards, .viasd-cards *, .viasd-headline,
.viasd-headline *, .viasd-round, .viasd-round * {color: var(--viasd-fg);}
.viasd-tokens {font-size: 1.2rem; line-height: 2.1; white-space: pre-wrap; word-break: break-word;
  background: var(--viasd-bg); padding: 0.6rem 0.9rem; border-radius: 8px; border: 1px solid var(--viasd-border);
  min-height: 4rem; font-family: ui-sans-serif, system-ui, sans-serif;}
#viasd-tokens {max-height: 19rem; overflow-y: auto;}
.viasd-tokens .tok {border-bottom-width: 3px; padding: 0 1px; border-radius: 2px; cursor: help;}
.viasd-tokens .tok.replaced, .viasd-round .tok.replaced {border-bottom-width: 5px;
  box-shadow: inset 0 0 0 2px var(--viasd-fg);}  /* a box as well as a colour: replaced, in both schemes */
.viasd-tokens .tok.special {font-size: 0.75rem; padding: 0 4px; border: 1px solid var(--viasd-border);
  border-radius: 4px; vertical-align: middle; white-space: nowrap;}
.viasd-tokens .tok.current {font-weight: 700;}  /* bold, not boxed: a box means "replaced" */
.viasd-tokens .tok.faded {opacity: 0.35;}
.viasd-tokens .pending {text-decoration: line-through; text-decoration-thickness: 1px;
  border-bottom: 1px dotted var(--viasd-border); opacity: 1; color: var(--viasd-muted);}
.viasd-tokens .tok.trusted, .viasd-legend .tok.trusted {box-shadow: inset 0 3px 0 var(--viasd-fg);}
.viasd-tokens .tok.awaiting, .viasd-legend .tok.awaiting {outline: 2px dashed var(--viasd-muted); outline-offset: 1px;}
.viasd-tokens .tok.cut, .viasd-legend .tok.cut, .viasd-round .tok.cut {text-decoration: line-through;
  text-decoration-thickness: 2px; color: var(--viasd-muted);}
.viasd-tokens .placeholder {color: var(--viasd-muted); font-style: italic;}
.viasd-tokens mark.diff, .viasd-tokens mark.diff * {background: #F0E442; color: #111111; font-weight: 700;
  border-bottom: 3px solid #111111;}
.viasd-tokens del.diff {background: #FFD0D0; color: #5c0000; text-decoration: line-through;
  text-decoration-thickness: 2px; font-size: 0.95em; padding: 0 2px; border-radius: 3px;}
.dark .viasd-tokens del.diff {background: #4a1414; color: #ffd6d6;}
.viasd-ins {font-weight: 700; text-decoration: underline; text-decoration-thickness: 2px;}
.viasd-del {text-decoration: line-through; text-decoration-thickness: 2px;}
.viasd-note {font-size: 0.95rem; color: var(--viasd-muted); margin-top: 0.3rem;}
.viasd-legend {display: flex; flex-wrap: wrap; gap: 0.2rem 0.9rem; font-size: 0.95rem;
  background: var(--viasd-panel); padding: 0.35rem 0.7rem; border-radius: 8px; border: 1px solid var(--viasd-border);}
.viasd-legend .item {display: inline-flex; align-items: center; gap: 0.3rem;}
.viasd-legend .tok {border-bottom-width: 3px; padding: 0 4px; font-weight: 600;}
.viasd-legend .tok.replaced {border-bottom-width: 5px; box-shadow: inset 0 0 0 2px var(--viasd-fg);}
.viasd-legend .count, .viasd-cards .note {color: var(--viasd-muted); font-size: 0.9rem;}
.viasd-headline {display: grid; grid-template-columns: minmax(0, 1.6fr) minmax(0, 1fr) minmax(0, 1fr); gap: 0.4rem;}
.viasd-headline .stat {border-radius: 8px; border: 2px solid var(--viasd-border); background: var(--viasd-bg);
  padding: 0.3rem 0.5rem;}
.viasd-headline .stat.modelled {border-color: #0072B2;}
.viasd-headline .stat.fidelity {border-color: #009E73;}
.viasd-headline .label {font-size: 0.85rem; color: var(--viasd-muted);}
.viasd-headline .value {font-size: 1.45rem; font-weight: 700; font-variant-numeric: tabular-nums;}
.viasd-headline .line {display: flex; align-items: center; gap: 0.35rem; white-space: nowrap; overflow: hidden;}
.viasd-headline .here {font-size: 0.74rem; line-height: 1.1; font-weight: 600; color: var(--viasd-muted);
  cursor: help;}  /* the measured speed-up beside the modelled one: two short lines within the value's height */
.viasd-headline .partial {grid-column: 1 / -1; font-weight: 700; height: 1.5rem; line-height: 1.5rem;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis;}
.viasd-cards {display: grid; grid-template-columns: repeat(auto-fit, minmax(15rem, 1fr)); gap: 0.8rem;}
.viasd-card {border-radius: 8px; padding: 0.6rem 0.9rem; border: 2px solid var(--viasd-border);
  background: var(--viasd-bg); font-size: 1.05rem;}
.viasd-card h4 {margin: 0 0 0.3rem 0; font-size: 1.05rem;}
.viasd-card.modelled {border-color: #0072B2;}
.viasd-card.measured {border-color: #D55E00;}
.viasd-card.fidelity {border-color: #009E73;}
.viasd-card .big {font-size: 1.6rem; font-weight: 700;}
.viasd-card table {width: 100%; border-collapse: collapse;}
.viasd-card td {padding: 0.1rem 0.2rem;}
.viasd-card td.v {text-align: right; font-variant-numeric: tabular-nums; font-weight: 600;}
.viasd-round table {border-collapse: collapse; font-size: 1.1rem; background: var(--viasd-bg);}
.viasd-round th, .viasd-round td {border: 1px solid var(--viasd-border); padding: var(--viasd-cell-pad, 0.3rem 0.6rem);
  text-align: left;}
.viasd-round td.tokcell {font-family: ui-monospace, monospace; white-space: pre;}
.viasd-round .tok {border-bottom-width: 3px; padding: 0 2px; border-radius: 2px;}
.min_value, .max_value, .label-wrap .icon {color: var(--viasd-muted) !important;}
button[role=tab].selected {color: #1d4ed8;}
.dark button[role=tab].selected, .dark #viasd-files .download-link, .dark .prose a {color: #93c5fd;}
#viasd-status {font-size: 1.0rem; height: 1.6rem; overflow: hidden;}
#viasd-status p {margin: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;}
#viasd-status [data-testid=status-tracker] {display: none !important;}
#viasd-status .pending, #viasd-status.pending {opacity: 1;}  /* the line that says a run is queued stays readable */
#viasd-cockpit #viasd-tau-accept .head label, #viasd-cockpit #viasd-tau-slim .head label,
#viasd-cockpit #viasd-gamma .head label {font-size: 0.9rem;}
#viasd-recorded-buttons {flex-wrap: nowrap; gap: 0.4rem;}
#viasd-recorded-buttons button {min-width: 0; white-space: normal; line-height: 1.15; font-size: 0.8rem;
                                padding: 0.2rem 0.4rem;}
#viasd-example input {padding-right: 2.2rem; text-overflow: ellipsis;}
.viasd-stale {opacity: 0.45; filter: grayscale(0.7); transition: opacity 0.1s;}
.viasd-headline.ghost .value {opacity: 0.55; font-style: italic;}
.viasd-headline.ghost .stat {border-style: dashed;}
#viasd-notch .viasd-kind-line {font-size: 0.85rem; line-height: 1.1rem; font-weight: 600; color: var(--viasd-fg);
  overflow: hidden; display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical;}
#viasd-notch .viasd-notch-line {font-size: 0.9rem; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  height: 1.3rem; color: var(--viasd-fg);}
#viasd-notch .viasd-grid-line {font-size: 0.8rem; line-height: 1.1rem; color: var(--viasd-muted); height: 2.2rem;
  overflow: hidden; display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical;}
.viasd-why {margin: 0.2rem 0; color: var(--viasd-fg);}
#viasd-tradeoff .viasd-tradeoff {min-height: 12.5rem;}
#viasd-notch {min-height: 5.7rem;}
.viasd-tradeoff .keys {display: flex; flex-wrap: wrap; gap: 0.1rem 0.8rem; font-size: 0.85rem; color: var(--viasd-fg);}
.viasd-tradeoff .k::before {content: ""; display: inline-block; width: 1.1rem; height: 0; margin-right: 0.3rem;
  vertical-align: middle; border-top: 3px solid currentColor;}
.viasd-tradeoff .k.speed::before {border-color: #0072B2;}
.viasd-tradeoff .k.words::before {border-color: #D55E00;}
.viasd-tradeoff .k.rejected::before {border-color: #009E73; border-top-style: dashed;}
.viasd-tradeoff .k.at::before {display: none;}
.viasd-tradeoff-svg, .viasd-picker-svg {width: 100%; height: auto; display: block;}
.viasd-tradeoff-svg text, .viasd-picker-svg text {font-size: 11px; fill: var(--viasd-fg);}
.viasd-tradeoff-svg path {fill: none; stroke-width: 2.5;}
.viasd-tradeoff-svg path.speed {stroke: #0072B2;} .viasd-tradeoff-svg circle.speed {fill: #0072B2;}
.viasd-tradeoff-svg path.words {stroke: #D55E00;} .viasd-tradeoff-svg circle.words {fill: #D55E00;}
.viasd-tradeoff-svg path.rejected {stroke: #009E73; stroke-dasharray: 5 3;}
.viasd-tradeoff-svg line.axis {stroke: var(--viasd-muted);}
.viasd-tradeoff-svg line.plain {stroke: var(--viasd-muted); stroke-dasharray: 3 3;}
.viasd-tradeoff-svg line.now {stroke: var(--viasd-fg); stroke-width: 2;}
.viasd-picker-svg rect.cell {fill: var(--viasd-panel); stroke: var(--viasd-border); cursor: pointer;}
.viasd-picker-svg rect.cell.done {fill: #56B4E955;}
.viasd-picker-svg rect.cell.invalid {fill: var(--viasd-bg); cursor: not-allowed;}
.viasd-picker-svg rect.cell.here {stroke: var(--viasd-fg); stroke-width: 3;}
#viasd-compare-table table {font-size: 0.9rem;}
#viasd-compare-table th, #viasd-grid-table th, #viasd-compare-table th *, #viasd-grid-table th * {
  word-break: normal !important; overflow-wrap: normal !important; hyphens: none;}
.toast-wrap {top: auto !important; bottom: var(--size-4, 1rem) !important;}
.toast-wrap > :nth-last-child(n+3) {display: none !important;}
.head:has(> label .info-text) {flex-wrap: wrap; row-gap: 0.2rem;}
.head:has(> label .info-text) > label {flex: 1 1 11rem; min-width: min(11rem, 100%);}
.info-text {word-break: normal; overflow-wrap: normal;}
""" + dark_css()
