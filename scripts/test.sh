#!/usr/bin/env bash
# Every test: unit, integration (real Docker, real boxes), end-to-end (Playwright in Debian's
# Chromium). Installs and starts what it needs first, through scripts/setup.sh.
#
# The suites mostly wait on boxes, not on the CPU (a sequential run kept 2 cores ~20 % busy),
# so the in-box agent tests run beside the unit and integration tests and the end-to-end tests
# beside the integration tests. Each suite labels its boxes with its own run label, so one suite's
# cleanup never removes the other's boxes; each server adopts only its own boxes.
set -euo pipefail
cd "$(dirname "$0")/.."

# The store's own tests on PostgreSQL run too (tests/unit/store-postgres.test.ts, no boxes): set-up
# starts Debian's PostgreSQL for them. HOLM_TEST_POSTGRES=0 leaves it out; HOLM_TEST_STORE=postgres
# runs every suite's servers on PostgreSQL instead of SQLite (docs/decisions/0020).
export HOLM_TEST_POSTGRES=${HOLM_TEST_POSTGRES:-1}
# The test of two servers behind a proxy (tests/integration/cluster.test.ts) shares PostgreSQL and
# Redis between them: set-up starts Debian's redis-server for it. HOLM_TEST_REDIS=0 leaves it out.
export HOLM_TEST_REDIS=${HOLM_TEST_REDIS:-1}
# The swarm test places 10 boxes on each of three engines when run alone; beside the other suites
# on a 2-core machine 30 desktops starting at once starved everything, so the whole run asks for 3.
export HOLM_TEST_SWARM_PER_NODE=${HOLM_TEST_SWARM_PER_NODE:-3}
bash scripts/setup.sh

RUN="run-$(date +%s)-$$"
LOGS=$(mktemp -d)
# Every test server of every suite writes its output here, and the tests the secrets they used
# (tests/support/log-secrets.ts); the last step reads the one for the other.
export HOLM_TEST_LOG_DIR="$LOGS/servers"
cleanup() {
  # Boxes carry holm.test=<run>-<suite>: remove whatever a failed test left behind.
  for suite in unit agent int int2 int3 e2e; do
    ids=$(/usr/bin/docker ps -aq --filter "label=holm.test=${RUN}-${suite}" 2>/dev/null || true)
    [ -n "$ids" ] && /usr/bin/docker rm -f $ids >/dev/null 2>&1 || true
  done
  rm -rf "$LOGS"
}
trap cleanup EXIT

# Runs a suite in the background, its output kept in a file until it is printed whole.
bg() {
  local name=$1; shift
  # `|| rc=$?`: under set -e a failing suite would end the subshell before its code was written.
  ( rc=0; HOLM_TEST_RUN="${RUN}-${name}" "$@" >"$LOGS/$name.log" 2>&1 || rc=$?; echo "$rc" >"$LOGS/$name.rc" ) &
}
# Waits for a background suite, prints its output and gives its exit code.
fg() {
  local name=$1 pid=$2
  wait "$pid" || true
  echo "== $3"
  cat "$LOGS/$name.log"
  # No exit code means the suite's shell ended without reaching its last step (killed): a failure.
  if [[ ! -s $LOGS/$name.rc ]]; then
    echo "== $3: ended without an exit code (killed?)"
    return 1
  fi
  return "$(cat "$LOGS/$name.rc")"
}

status=0
# What failed, suite by suite, printed again last: CI shows a run's tail, and a failure in the
# first suites would otherwise be far above it.
failed=()
note_failure() {
  failed+=("$1")
  # vitest's "FAIL file > test" lines and Playwright's numbered "✘" ones, without colours.
  sed 's/\x1b\[[0-9;]*m//g' "$2" 2>/dev/null | grep -E '^ *(FAIL|✘) ' | sort -u | head -20 >>"$LOGS/summary" || true
  # And why: vitest's failure reports (the assertion, its expected/received and the test line),
  # without the code frames, printed last, since CI keeps only a run's tail.
  sed 's/\x1b\[[0-9;]*m//g' "$2" 2>/dev/null | sed -n '/Failed Tests [0-9]/,/^ *Test Files /p' |
    grep -vE '^ *[0-9]+\|( |$)|^ *\| |^[[:space:]]*$|^ *Test Files |⎯⎯⎯⎯ Failed' | cut -c1-240 | head -40 >>"$LOGS/why" || true
}
echo "== layers (docs/decisions/0009)"
node scripts/check-layers.mjs || { status=1; failed+=(layers); }

# The in-box agent suite (host Xvfb, no engine) runs on beside the integration suite, whose
# length is the run's: waiting for it first added its 2.5 minutes to the whole run.
bg agent npx vitest run --config vitest.agent.config.ts
agent=$!
# The unit suite runs first, alone: beside the integration suites its tests hit their 5 s
# timeouts (a CI run: 4 of them, the unit suite taking 6 minutes) and the run was no shorter.
echo "== unit"
HOLM_TEST_RUN="${RUN}-unit" npx vitest run --project unit 2>&1 | tee "$LOGS/unit.log" || { status=1; note_failure unit "$LOGS/unit.log"; }

# The integration files in three shards at once (vitest's --shard), each in order: one in order
# took 26–31 minutes here, two shards 25.5 minutes each by stop 45, and the files mostly wait on
# boxes. The shards are cut by each file's past duration (tests/support/duration-sequencer.ts;
# scripts/test-durations.mjs writes the list from a run's log). Each shard has its own run label,
# so no shard's cleanup touches another's boxes.
# One retry: a console test that fails and then passes is reported as flaky, with its first
# failure, in the summary below (never silently), instead of failing the whole run.
bg e2e npx playwright test --retries=1
e2e=$!
bg int2 npx vitest run --project integration --shard=2/3
int2=$!
bg int3 npx vitest run --project integration --shard=3/3
int3=$!
echo "== integration (1 of 3)"
HOLM_TEST_RUN="${RUN}-int" npx vitest run --project integration --shard=1/3 2>&1 | tee "$LOGS/int.log" || { status=1; note_failure "integration (1 of 3)" "$LOGS/int.log"; }
fg int2 "$int2" "integration (2 of 3)" || { status=1; note_failure "integration (2 of 3)" "$LOGS/int2.log"; }
fg int3 "$int3" "integration (3 of 3)" || { status=1; note_failure "integration (3 of 3)" "$LOGS/int3.log"; }
fg agent "$agent" "in-box agent (host Xvfb)" || { status=1; note_failure "in-box agent" "$LOGS/agent.log"; }
fg e2e "$e2e" "end-to-end" || { status=1; note_failure "end-to-end" "$LOGS/e2e.log"; }
echo "== secrets in the servers' logs"
node --import tsx scripts/check-log-secrets.ts "$HOLM_TEST_LOG_DIR" || { status=1; failed+=("secrets in logs"); }
echo "== summary"
echo "open files: $(ulimit -n) (hard $(ulimit -Hn)); $(nproc) cores; $(free -g | awk '/^Mem:/ {print $2 " GB, " $7 " GB available"}')"
# Console tests that failed once and passed on their retry: named, with their first failure.
flaky=$(sed 's/\x1b\[[0-9;]*m//g' "$LOGS/e2e.log" 2>/dev/null | sed -n '/^ *[0-9]* flaky$/,/^ *[0-9]* passed/p' | grep -v 'passed' || true)
if [[ -n "$flaky" ]]; then
  echo "$flaky"
  sed 's/\x1b\[[0-9;]*m//g' "$LOGS/e2e.log" | grep -E -A40 '^ +[0-9]+\) .*›' | head -120 || true
fi
if ((status == 0)); then
  echo "every suite passed"
else
  echo "failed: ${failed[*]}"
  cat "$LOGS/summary" 2>/dev/null || true
  # A server that died mid-test says so outside its JSON log lines (a stack on stderr, or the test
  # harness's "exited by itself"), or at pino's fatal level: the last of those, since the logs go
  # with the run.
  echo "== what the test servers said outside their log lines (the last 12)"
  { grep -hv '^{' "$HOLM_TEST_LOG_DIR"/*.log; grep -h '"level":60' "$HOLM_TEST_LOG_DIR"/*.log; } 2>/dev/null |
    grep -v '^[[:space:]]*$' | tail -12 | cut -c1-300 || true
  if [[ -s $LOGS/why ]]; then
    echo "== why the tests failed"
    cat "$LOGS/why"
  fi
fi
exit $status
