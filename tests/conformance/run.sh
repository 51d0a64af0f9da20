#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against Cortex and against the test-only fixture
# server.
#
#   CORTEX_BIN=build/cortex CONFORMANCE_SERVER_BIN=build/conformance_server \
#     tests/conformance/run.sh
#
# Phase 1: `cortex serve --insecure-no-auth` must pass every scenario in
#          REQUIRED_SCENARIOS below.
# Phase 2: the fixture server runs every other server scenario; the outcome is
#          compared with expected-failures.txt (`scenario-name  # reason`).
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
#   CONFORMANCE_WARNINGS_FAIL=1      WARNING checks count as failures
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE="$HERE/node_modules/node/bin/node"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
BASELINE="$HERE/expected-failures.txt"

REQUIRED_SCENARIOS=(
  server-initialize
  ping
  tools-list
  server-sse-multiple-streams
  dns-rebinding-protection
)

SCENARIO_TIMEOUT="${CONFORMANCE_SCENARIO_TIMEOUT:-120}"
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
[[ -x "$NODE" && -f "$SUITE" ]] || die "suite install incomplete ($NODE / $SUITE missing)"
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

# run_scenario URL NAME [required] -> sets SC_VERDICT (pass|fail), prints a line.
# A required scenario must also record at least one SUCCESS check, so a run
# that only produced WARNING/INFO (e.g. server-sse-multiple-streams against a
# server that issues no Mcp-Session-Id) does not count as passing.
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
  local counts="0 0 0 0"
  if [[ -n "$checks" ]]; then
    counts="$("$NODE" -e '
      const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      const n = (s) => c.filter((x) => x.status === s).length;
      console.log(n("SUCCESS"), n("FAILURE"), n("WARNING"), c.length);
    ' "$checks")"
  fi
  local ok bad warn all
  read -r ok bad warn all <<<"$counts"
  TOTAL_SUCCESS=$((TOTAL_SUCCESS + ok))
  TOTAL_FAILURE=$((TOTAL_FAILURE + bad))
  TOTAL_WARNING=$((TOTAL_WARNING + warn))

  SC_VERDICT=pass
  local why=""
  if [[ -z "$checks" || "$all" -eq 0 ]]; then
    SC_VERDICT=fail; why=" (no results; suite exit $rc)"
  elif (( rc == 124 || rc == 137 )); then
    SC_VERDICT=fail; why=" (timed out after ${SCENARIO_TIMEOUT}s)"
  elif (( bad > 0 )); then
    SC_VERDICT=fail
  elif [[ -n "$required" ]] && (( ok == 0 )); then
    SC_VERDICT=fail; why=" (required scenario recorded no SUCCESS check)"
  elif (( warn > 0 )) && [[ "$WARNINGS_FAIL" == 1 ]]; then
    SC_VERDICT=fail; why=" (warnings count as failures)"
  elif (( rc != 0 )); then
    SC_VERDICT=fail; why=" (suite exit $rc)"
  fi
  printf '  %-4s %-34s %2d ok, %d failed, %d warnings%s\n' \
    "$( [[ $SC_VERDICT == pass ]] && echo PASS || echo FAIL )" "$name" "$ok" "$bad" "$warn" "$why"
  if [[ -n "$checks" ]] && (( bad > 0 || warn > 0 )); then
    "$NODE" -e '
      const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      for (const x of c) if (x.status === "FAILURE" || x.status === "WARNING")
        console.log(`         ${x.status} ${x.id}: ${x.errorMessage || (x.details && x.details.message) || x.description}`);
    ' "$checks"
  fi
  if [[ $SC_VERDICT == fail && -z "$checks" ]]; then
    tail -n 20 "$log" | sed 's/^/         | /'
  fi
}

# --- scenario lists ---
mapfile -t ALL_SCENARIOS < <("$NODE" "$SUITE" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
(( ${#ALL_SCENARIOS[@]} > 0 )) || die "could not list server scenarios"
is_known() { local s; for s in "${ALL_SCENARIOS[@]}"; do [[ "$s" == "$1" ]] && return 0; done; return 1; }
for s in "${REQUIRED_SCENARIOS[@]}"; do is_known "$s" || die "required scenario '$s' not in suite"; done

declare -A EXPECTED=()
if [[ -f "$BASELINE" ]]; then
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%%#*}"
    line="$(echo "$line" | tr -d '[:space:]')"
    [[ -z "$line" ]] && continue
    is_known "$line" || die "expected-failures.txt names unknown scenario '$line'"
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

# --- phase 1: cortex ---
PHASE=cortex
PORT="$(free_port)"
mkdir -p "$WORK/data"
start_server cortex "$PORT" \
  "$CORTEX_BIN" serve --insecure-no-auth --data "$WORK/data" --listen "127.0.0.1:$PORT" \
  || die "cortex did not start"
URL="http://127.0.0.1:$PORT/mcp"
echo "conformance: cortex at $URL"
for s in "${REQUIRED_SCENARIOS[@]}"; do
  run_scenario "$URL" "$s" required
  if [[ $SC_VERDICT == pass ]]; then PASSED=$((PASSED + 1)); else REQUIRED_FAILED+=("$s"); fi
done
stop_server

# --- phase 2: fixture server ---
if [[ "${CONFORMANCE_SKIP_FIXTURE:-0}" != 1 ]]; then
  PHASE=fixture
  PORT="$(free_port)"
  start_server fixture "$PORT" "$CONFORMANCE_SERVER_BIN" --listen "127.0.0.1:$PORT" \
    || die "fixture server did not start"
  URL="http://127.0.0.1:$PORT/mcp"
  echo "conformance: fixture server at $URL"
  for s in "${ALL_SCENARIOS[@]}"; do
    skip=0
    for r in "${REQUIRED_SCENARIOS[@]}"; do [[ "$r" == "$s" ]] && skip=1; done
    (( skip )) && continue
    run_scenario "$URL" "$s"
    if [[ -n "${EXPECTED[$s]:-}" ]]; then
      if [[ $SC_VERDICT == pass ]]; then STALE+=("$s"); else EXPECTED_FAILED+=("$s"); fi
    else
      if [[ $SC_VERDICT == pass ]]; then PASSED=$((PASSED + 1)); else UNEXPECTED_FAILED+=("$s"); fi
    fi
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
