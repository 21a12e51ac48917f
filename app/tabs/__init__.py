"""One module per tab: each builds its own layout and wires its own handlers."""
