#!/usr/bin/env bash
# The old name of scripts/check-layout.py, which replaced this script: it
# derives the allowed includes and the pure modules from the table in
# docs/ARCHITECTURE.md.
exec python3 "$(dirname "$0")/check-layout.py" "$@"
