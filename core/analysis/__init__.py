"""Reading traces: metric definitions, fidelity, reliability, break-even, sweeps."""
