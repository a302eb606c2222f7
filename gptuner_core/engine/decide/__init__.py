"""Deciding a winner: the verdict rules, ties, the finish (top-k re-validation), shape re-validation, pairwise.
May import evaluate/ (rounds), files/, process/, loop's ETA and measuring device, and the layers below."""
