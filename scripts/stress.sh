#!/usr/bin/env bash
# The in-box agent's suite and the drive suite, ROUNDS times (default 5), while a CPU hog keeps
# every core busy: flakes show up here before users see them. Every failure of every round is
# reported, with the round's log kept under $STRESS_DIR.
#
#   npm run test:stress [-- ROUNDS]
#
# The heavy typing tests repeat HOLM_TEST_REPEAT times (20 here), the drag test drags
# HOLM_TEST_DRAGS times (50).
set -uo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-${HOLM_STRESS_ROUNDS:-5}}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "stress: ROUNDS must be a positive whole number, got '$rounds'" >&2; exit 2; }

bash scripts/setup.sh >/dev/null 2>&1 || { echo "stress: setup failed (run bash scripts/setup.sh to see why)" >&2; exit 1; }
if ! command -v stress-ng >/dev/null; then
  echo "== installing stress-ng (Debian)"
  DEBIAN_FRONTEND=noninteractive apt-get install -qy stress-ng >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -qy stress-ng >/dev/null; } ||
    echo "stress: stress-ng could not be installed; using a busy loop per core"
fi

export HOLM_TEST_RUN="stress-$(date +%s)-$$"
export HOLM_TEST_REPEAT=${HOLM_TEST_REPEAT:-20}
export HOLM_TEST_DRAGS=${HOLM_TEST_DRAGS:-50}
STRESS_DIR=${STRESS_DIR:-$(mktemp -d /tmp/holm-stress-XXXXXX)}
mkdir -p "$STRESS_DIR"
hog=()

cleanup() {
  ((${#hog[@]})) && kill "${hog[@]}" 2>/dev/null
  ids=$(/usr/bin/docker ps -aq --filter "label=holm.test=${HOLM_TEST_RUN}" 2>/dev/null || true)
  [ -n "$ids" ] && /usr/bin/docker rm -f $ids >/dev/null 2>&1 || true
}
trap cleanup EXIT

cores=$(nproc)
if command -v stress-ng >/dev/null; then
  stress-ng --cpu "$cores" --cpu-load 100 --quiet &
  hog+=($!)
else
  for ((i = 0; i < cores; i++)); do
    (while :; do :; done) &
    hog+=($!)
  done
fi
echo "== CPU hog on $cores core(s); $rounds round(s); logs in $STRESS_DIR"

failures=0
summary=()
suite() { # NAME LOG CMD...: runs one suite, prints its counts and failing tests
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$? took=$((SECONDS - t0))
  local counts
  counts=$(sed -e 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ +Tests ' | tail -1 | sed -e 's/^ *Tests *//')
  summary+=("round $r $name: ${counts:-no result} in ${took} s")
  if ((rc != 0)); then
    failures=$((failures + 1))
    sed -e 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ *(×|FAIL) ' | sort -u | sed -e "s/^/  round $r $name: /"
  fi
}

for ((r = 1; r <= rounds; r++)); do
  echo "== round $r of $rounds"
  suite agent "$STRESS_DIR/round-$r-agent.log" npx vitest run --config vitest.agent.config.ts
  suite drive "$STRESS_DIR/round-$r-drive.log" npx vitest run --project integration tests/integration/drive.test.ts
done

echo
echo "== summary (CPU hog on $cores core(s))"
printf '%s\n' "${summary[@]}"
if ((failures)); then
  echo "$failures suite run(s) failed; logs in $STRESS_DIR"
  exit 1
fi
echo "every round passed"
