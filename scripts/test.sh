#!/usr/bin/env bash
# Every test: unit, integration (real Docker, real boxes), end-to-end (Playwright in Debian's
# Chromium). Installs and starts what it needs first, through scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

export HOLM_TEST_RUN="run-$(date +%s)-$$"
cleanup() {
  # Boxes carry holm.test=<run>: remove whatever a failed test left behind.
  ids=$(/usr/bin/docker ps -aq --filter "label=holm.test=${HOLM_TEST_RUN}" 2>/dev/null || true)
  [ -n "$ids" ] && /usr/bin/docker rm -f $ids >/dev/null 2>&1 || true
}
trap cleanup EXIT

status=0
echo "== layers (docs/decisions/0009)"
node scripts/check-layers.mjs || status=1
echo "== unit"
npx vitest run --project unit || status=1
echo "== in-box agent (host Xvfb)"
npx vitest run --config vitest.agent.config.ts || status=1
echo "== integration"
npx vitest run --project integration || status=1
echo "== end-to-end"
npx playwright test || status=1
exit $status
