#!/usr/bin/env bash
# Set up (once) and run the main job: a papers100M recommendation on the shipped price snapshot.
# Extra arguments replace the defaults, e.g. scripts/run.sh --dataset products --budget 5 --json
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "$#" -eq 0 ]; then set -- --dataset papers100M --budget 50; fi
exec .venv/bin/planner recommend "$@"
