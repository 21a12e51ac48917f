"""What the app draws from a trace: coloured text, cards, charts, captions; no model runs here."""
