"""Deciding a winner: the verdict rules, ties, the finish (top-k re-validation), shape re-validation, pairwise.
May import records, measurement, evaluate/ (rounds), files/ and process/; never the dashboard, views or CLI."""
