"""Numerical solvers: damped Newton, the penalised linear-map NLL, temperature."""
