#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against Cortex and against the test-only fixture
# server.
#
#   CORTEX_BIN=build/cortex CONFORMANCE_SERVER_BIN=build/conformance_server \
#     tests/conformance/run.sh
#
# Two suites: 0.1.16 (scenario by scenario) and 0.2.0-alpha.12 (package alias
# conformance-next), which runs whole requirement sets (--requirements 2026-07-28
# and 2025-11-25) in one go each; its scenarios are scored from their checks.json.
#
# Phase 1: `cortex serve --insecure-no-auth` must pass every scenario in
#          REQUIRED_SCENARIOS (0.1.16) and CORTEX_<set> (0.2) below.
# Phase 2: the fixture server runs every other 0.1.16 scenario, every scored scenario
#          of both requirement sets and the tasks extension's scenarios (run by the
#          suite with a set, never scored by it); the outcome is compared with
#          expected-failures.txt (`scenario-name  # reason`, `SET:scenario-name`).
#          An unexpected failure, or a listed scenario that now passes, fails
#          the run.
#
# A scenario fails when any of its checks has status FAILURE (the suite's own
# verdict for a single scenario); a required (phase 1) scenario must also have
# at least one SUCCESS check. WARNING checks are printed; set
# CONFORMANCE_WARNINGS_FAIL=1 to count them as failures too (that is what the
# suite does in its own --expected-failures mode).
#
# Optional environment:
#   CONFORMANCE_SKIP_FIXTURE=1       run phase 1 only
#   CONFORMANCE_RESULTS_DIR=DIR      keep per-scenario checks.json/logs there
#   CONFORMANCE_SCENARIO_TIMEOUT=S   per-scenario time limit (default 120 s)
#   CONFORMANCE_REQUIREMENTS_TIMEOUT=S  time limit of one 0.2 requirement set (default 600 s)
#   CONFORMANCE_WARNINGS_FAIL=1      WARNING checks count as failures
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE="$HERE/node_modules/node/bin/node"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
# 0.2.0-alpha.12, installed under an alias beside 0.1.16 (package.json).
SUITE_NEXT="$HERE/node_modules/conformance-next/dist/index.js"
REQUIREMENT_SETS=(2026-07-28 2025-11-25)
BASELINE="$HERE/expected-failures.txt"

REQUIRED_SCENARIOS=(
  server-initialize
  ping
  tools-list
  server-sse-multiple-streams
  dns-rebinding-protection
)

# The 0.2 suite's scenarios `cortex serve` must pass per requirement set: those that do
# not depend on the suite's fixture names.
CORTEX_2026_07_28=(
  server-stateless
  tools-list
  server-sse-multiple-streams
  dns-rebinding-protection
  caching
  sep-2164-resource-not-found
)
CORTEX_2025_11_25=(
  server-initialize
  ping
  tools-list
  logging-set-level
  server-sse-multiple-streams
  dns-rebinding-protection
)

SCENARIO_TIMEOUT="${CONFORMANCE_SCENARIO_TIMEOUT:-120}"
REQUIREMENTS_TIMEOUT="${CONFORMANCE_REQUIREMENTS_TIMEOUT:-600}"
WARNINGS_FAIL="${CONFORMANCE_WARNINGS_FAIL:-0}"

die() { echo "conformance: $*" >&2; exit 1; }

: "${CORTEX_BIN:?set CORTEX_BIN to the cortex binary}"
[[ -x "$CORTEX_BIN" ]] || die "CORTEX_BIN is not executable: $CORTEX_BIN"
if [[ "${CONFORMANCE_SKIP_FIXTURE:-0}" != 1 ]]; then
  : "${CONFORMANCE_SERVER_BIN:?set CONFORMANCE_SERVER_BIN to the fixture server binary (or CONFORMANCE_SKIP_FIXTURE=1)}"
  [[ -x "$CONFORMANCE_SERVER_BIN" ]] || die "CONFORMANCE_SERVER_BIN is not executable: $CONFORMANCE_SERVER_BIN"
fi

# --- Node 22 + suite (npm package `node` ships the binary; machine node is 20) ---
if [[ ! -x "$NODE" || ! -f "$SUITE" ]]; then
  echo "conformance: installing pinned suite and Node 22 (npm ci in $HERE)"
  command -v npm >/dev/null || die "npm is required to install the suite"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi
if [[ ! -f "$SUITE_NEXT" ]]; then
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi
[[ -x "$NODE" && -f "$SUITE" && -f "$SUITE_NEXT" ]] || die "suite install incomplete ($NODE / $SUITE missing)"
node_major="$("$NODE" -p 'process.versions.node.split(".")[0]')"
[[ "$node_major" == 22 ]] || die "expected Node 22 at $NODE, got $("$NODE" --version)"

# --- scratch space and cleanup ---
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cortex-conformance.XXXXXX")"
RESULTS="${CONFORMANCE_RESULTS_DIR:-$WORK/results}"
mkdir -p "$RESULTS"
SERVER_PID=""
SERVER_LOG=""

stop_server() {
  if [[ -n "$SERVER_PID" ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
cleanup() {
  stop_server
  rm -rf "$WORK"  # results live here too unless CONFORMANCE_RESULTS_DIR is set
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

http_ok() {  # http_ok URL -> exit 0 if GET answers 2xx
  "$NODE" -e 'fetch(process.argv[1],{signal:AbortSignal.timeout(2000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$1"
}

# start_server NAME PORT CMD... : runs CMD in background, waits for /healthz
start_server() {
  local name="$1" port="$2"; shift 2
  SERVER_LOG="$RESULTS/$name.log"
  echo "conformance: starting $name: $*"
  "$@" >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 150); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "conformance: $name exited during startup; log:" >&2
      tail -n 50 "$SERVER_LOG" >&2 || true
      SERVER_PID=""
      return 1
    fi
    if http_ok "http://127.0.0.1:$port/healthz"; then return 0; fi
    sleep 0.2
  done
  echo "conformance: $name not ready on :$port after 30s; log:" >&2
  tail -n 50 "$SERVER_LOG" >&2 || true
  return 1
}

# Aggregate check counts over every scenario run (the suite's "Total" numbers).
TOTAL_SUCCESS=0
TOTAL_FAILURE=0
TOTAL_WARNING=0

# score CHECKS NAME REQUIRED RC -> sets SC_VERDICT (pass|fail), prints a line.
# A required scenario must also record at least one SUCCESS check, so a run
# that only produced WARNING/INFO (e.g. server-sse-multiple-streams against a
# server that issues no Mcp-Session-Id) does not count as passing.
# With UNTESTABLE_OK=1 (cortex against the 0.2 suite), a FAILURE the suite itself marks
# untestable (details.untestable: the server lacks a fixture tool such as
# test_missing_capability) is printed but not counted.
score() {
  local checks="$1" name="$2" required="$3" rc="$4"
  local counts="0 0 0 0 0"
  if [[ -n "$checks" ]]; then
    counts="$("$NODE" -e '
      const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      const lenient = process.argv[2] === "1";
      const untestable = (x) => x.status === "FAILURE" && x.details && x.details.untestable === true;
      const n = (s) => c.filter((x) => x.status === s && !(lenient && untestable(x))).length;
      console.log(n("SUCCESS"), n("FAILURE"), n("WARNING"), c.length, lenient ? c.filter(untestable).length : 0);
    ' "$checks" "${UNTESTABLE_OK:-0}")"
  fi
  local ok bad warn all untestable
  read -r ok bad warn all untestable <<<"$counts"
  TOTAL_SUCCESS=$((TOTAL_SUCCESS + ok))
  TOTAL_FAILURE=$((TOTAL_FAILURE + bad))
  TOTAL_WARNING=$((TOTAL_WARNING + warn))

  SC_VERDICT=pass
  local why=""
  if [[ -z "$checks" || "$all" -eq 0 ]]; then
    SC_VERDICT=fail; why=" (no results; suite exit $rc)"
  elif (( rc == 124 || rc == 137 )); then
    SC_VERDICT=fail; why=" (timed out)"
  elif (( bad > 0 )); then
    SC_VERDICT=fail
  elif [[ -n "$required" ]] && (( ok == 0 )); then
    SC_VERDICT=fail; why=" (required scenario recorded no SUCCESS check)"
  elif (( warn > 0 )) && [[ "$WARNINGS_FAIL" == 1 ]]; then
    SC_VERDICT=fail; why=" (warnings count as failures)"
  elif (( rc != 0 )); then
    SC_VERDICT=fail; why=" (suite exit $rc)"
  fi
  (( untestable > 0 )) && why+=" ($untestable untestable without fixture tools)"
  printf '  %-4s %-46s %2d ok, %d failed, %d warnings%s\n' \
    "$( [[ $SC_VERDICT == pass ]] && echo PASS || echo FAIL )" "$name" "$ok" "$bad" "$warn" "$why"
  if [[ -n "$checks" ]] && (( bad > 0 || warn > 0 )); then
    "$NODE" -e '
      const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      for (const x of c) if (x.status === "FAILURE" || x.status === "WARNING")
        console.log(`         ${x.status} ${x.id}: ${x.errorMessage || (x.details && x.details.message) || x.description}`);
    ' "$checks"
  fi
}

# run_scenario URL NAME [required]: one 0.1.16 scenario -> SC_VERDICT.
run_scenario() {
  local url="$1" name="$2" required="${3:-}"
  local safe="${name//\//_}"
  local outdir="$RESULTS/$PHASE/$safe"
  local log="$RESULTS/$PHASE/$safe.log"
  mkdir -p "$outdir"
  local rc=0
  timeout --kill-after=10 "$SCENARIO_TIMEOUT" \
    "$NODE" "$SUITE" server --url "$url" --scenario "$name" -o "$outdir" \
    >"$log" 2>&1 || rc=$?
  local checks
  checks="$(find "$outdir" -name checks.json -print -quit)"
  score "$checks" "$name" "$required" "$rc"
  if [[ $SC_VERDICT == fail && -z "$checks" ]]; then
    tail -n 20 "$log" | sed 's/^/         | /'
  fi
}

# run_requirements URL SET: the 0.2 suite's whole requirement set SET (2026-07-28 or
# 2025-11-25: it runs every scenario the revision requires, at its wire, in one go) into
# $RESULTS/$PHASE; sets REQ_RC. Score its scenarios with scenario_checks + score.
run_requirements() {
  local url="$1" set="$2"
  mkdir -p "$RESULTS/$PHASE"
  REQ_RC=0
  timeout --kill-after=10 "$REQUIREMENTS_TIMEOUT" \
    "$NODE" "$SUITE_NEXT" server --url "$url" --requirements "$set" -o "$RESULTS/$PHASE" \
    >"$RESULTS/$PHASE.log" 2>&1 || REQ_RC=$?
  # The suite exits 1 when any scenario of the set fails: each is scored by its checks.
  (( REQ_RC == 1 )) && REQ_RC=0
  return 0
}
# The checks.json of scenario NAME in the last run_requirements.
scenario_checks() {
  find "$RESULTS/$PHASE" -path "*/server-$1-20*/checks.json" -print -quit
}

# --- scenario lists ---
mapfile -t ALL_SCENARIOS < <("$NODE" "$SUITE" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
(( ${#ALL_SCENARIOS[@]} > 0 )) || die "could not list server scenarios"
is_known() { local s; for s in "${ALL_SCENARIOS[@]}"; do [[ "$s" == "$1" ]] && return 0; done; return 1; }
for s in "${REQUIRED_SCENARIOS[@]}"; do is_known "$s" || die "required scenario '$s' not in suite"; done
# The scored server scenarios of each 0.2 requirement set ("2026-07-28 name ...").
declare -A SET_SCENARIOS=()
for set in "${REQUIREMENT_SETS[@]}"; do
  SET_SCENARIOS[$set]="$("$NODE" "$SUITE_NEXT" list --server --requirements "$set" |
    sed -n '/^Server scenarios/,/^$/s/^  - \([^ ]*\).*/\1/p' | tr '\n' ' ')"
  [[ -n "${SET_SCENARIOS[$set]// /}" ]] || die "could not list the $set server scenarios"
done
in_set() { [[ " ${SET_SCENARIOS[$1]} " == *" $2 "* ]]; }
# The tasks extension's server scenarios of each set: run with it but never scored by the
# suite ("Run and reported, but never scored"); the fixture server must pass them all.
declare -A SET_TASKS=()
for set in "${REQUIREMENT_SETS[@]}"; do
  SET_TASKS[$set]="$("$NODE" "$SUITE_NEXT" list --server --requirements "$set" |
    sed -n '/^Run and reported/,$s/^    - \(tasks-[^ ]*\) \[server\].*/\1/p' | tr '\n' ' ')"
done
[[ -n "${SET_TASKS[2026-07-28]// /}" ]] || die "could not list the 2026-07-28 tasks scenarios"

# expected-failures.txt: `scenario  # reason` for 0.1.16, `SET:scenario  # reason` for a
# requirement set of the 0.2 suite (2026-07-28:..., 2025-11-25:...).
declare -A EXPECTED=()
if [[ -f "$BASELINE" ]]; then
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%%#*}"
    line="$(echo "$line" | tr -d '[:space:]')"
    [[ -z "$line" ]] && continue
    if [[ "$line" == *:* ]]; then
      set="${line%%:*}"
      [[ -n "${SET_SCENARIOS[$set]:-}" ]] || die "expected-failures.txt names unknown requirement set '$set'"
      in_set "$set" "${line#*:}" || die "expected-failures.txt names unknown $set scenario '${line#*:}'"
    else
      is_known "$line" || die "expected-failures.txt names unknown scenario '$line'"
    fi
    EXPECTED["$line"]=1
  done <"$BASELINE"
fi
for s in "${REQUIRED_SCENARIOS[@]}"; do
  [[ -z "${EXPECTED[$s]:-}" ]] || die "required scenario '$s' must not be in expected-failures.txt"
done

REQUIRED_FAILED=()
UNEXPECTED_FAILED=()
STALE=()
EXPECTED_FAILED=()
PASSED=0

# tally KEY: files the last verdict under expected failure KEY's rules.
tally() {
  if [[ -n "${EXPECTED[$1]:-}" ]]; then
    if [[ $SC_VERDICT == pass ]]; then STALE+=("$1"); else EXPECTED_FAILED+=("$1"); fi
  else
    if [[ $SC_VERDICT == pass ]]; then PASSED=$((PASSED + 1)); else UNEXPECTED_FAILED+=("$1"); fi
  fi
}

# --- phase 1: cortex, 0.1.16, then each 0.2 requirement set ---
PHASE=cortex
PORT="$(free_port)"
mkdir -p "$WORK/data"
start_server cortex "$PORT" \
  "$CORTEX_BIN" serve --insecure-no-auth --data "$WORK/data" --listen "127.0.0.1:$PORT" \
  || die "cortex did not start"
URL="http://127.0.0.1:$PORT/mcp"
echo "conformance: cortex at $URL (0.1.16)"
for s in "${REQUIRED_SCENARIOS[@]}"; do
  run_scenario "$URL" "$s" required
  if [[ $SC_VERDICT == pass ]]; then PASSED=$((PASSED + 1)); else REQUIRED_FAILED+=("$s"); fi
done
for set in "${REQUIREMENT_SETS[@]}"; do
  PHASE="cortex-$set"
  echo "conformance: cortex at $URL (0.2, --requirements $set)"
  run_requirements "$URL" "$set"
  list="CORTEX_${set//-/_}[@]"
  for s in "${!list}"; do
    in_set "$set" "$s" || die "cortex scenario '$s' is not required by $set"
    UNTESTABLE_OK=1 score "$(scenario_checks "$s")" "$set:$s" required "$REQ_RC"
    if [[ $SC_VERDICT == pass ]]; then PASSED=$((PASSED + 1)); else REQUIRED_FAILED+=("$set:$s"); fi
  done
done
stop_server

# --- phase 2: fixture server, 0.1.16 scenario by scenario, then each requirement set ---
if [[ "${CONFORMANCE_SKIP_FIXTURE:-0}" != 1 ]]; then
  PHASE=fixture
  PORT="$(free_port)"
  start_server fixture "$PORT" "$CONFORMANCE_SERVER_BIN" --listen "127.0.0.1:$PORT" \
    || die "fixture server did not start"
  URL="http://127.0.0.1:$PORT/mcp"
  echo "conformance: fixture server at $URL (0.1.16)"
  for s in "${ALL_SCENARIOS[@]}"; do
    skip=0
    for r in "${REQUIRED_SCENARIOS[@]}"; do [[ "$r" == "$s" ]] && skip=1; done
    (( skip )) && continue
    run_scenario "$URL" "$s"
    tally "$s"
  done
  for set in "${REQUIREMENT_SETS[@]}"; do
    PHASE="fixture-$set"
    echo "conformance: fixture server at $URL (0.2, --requirements $set)"
    run_requirements "$URL" "$set"
    for s in ${SET_SCENARIOS[$set]}; do
      score "$(scenario_checks "$s")" "$set:$s" "" 0
      tally "$set:$s"
    done
    # The tasks scenarios (extension): required to pass, like a scored one.
    for s in ${SET_TASKS[$set]}; do
      score "$(scenario_checks "$s")" "$set:$s" "" 0
      tally "$set:$s"
    done
    # The set's extension (tasks) and pending scenarios run too, unscored by the suite.
    sed -n '/^Not scored/,$p' "$RESULTS/$PHASE.log" | sed 's/^/  (info) /'
  done
  stop_server
fi

# --- summary ---
echo
echo "conformance suite check totals: SUCCESS=$TOTAL_SUCCESS FAILURE=$TOTAL_FAILURE WARNING=$TOTAL_WARNING"
(( ${#EXPECTED_FAILED[@]} )) && echo "expected failures (baselined): ${EXPECTED_FAILED[*]}"
(( ${#REQUIRED_FAILED[@]} )) && echo "FAILED required scenarios against cortex: ${REQUIRED_FAILED[*]}"
(( ${#UNEXPECTED_FAILED[@]} )) && echo "UNEXPECTED failures (not in expected-failures.txt): ${UNEXPECTED_FAILED[*]}"
(( ${#STALE[@]} )) && echo "UNEXPECTED passes (remove from expected-failures.txt): ${STALE[*]}"
[[ -n "${CONFORMANCE_RESULTS_DIR:-}" ]] && echo "results kept in $RESULTS"
failed=$(( ${#REQUIRED_FAILED[@]} + ${#UNEXPECTED_FAILED[@]} + ${#STALE[@]} ))
echo "conformance: $PASSED passed, $failed failed, ${#EXPECTED_FAILED[@]} skipped"
(( failed == 0 ))
