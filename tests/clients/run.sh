#!/usr/bin/env bash
# Runs the official MCP SDK client interop scripts against a Cortex binary.
#
#   CORTEX_BIN=/path/to/cortex tests/clients/run.sh [script.mjs ...]
#
# Each script prints PASS/FAIL lines and "<suite>: N passed, N failed"; this
# wrapper prints the totals and exits non-zero if any script failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if [[ -z "${CORTEX_BIN:-}" ]]; then
    echo "run.sh: set CORTEX_BIN to the cortex binary" >&2
    exit 2
fi
if [[ ! -x "$CORTEX_BIN" ]]; then
    echo "run.sh: CORTEX_BIN=$CORTEX_BIN is not an executable file" >&2
    exit 2
fi
CORTEX_BIN="$(cd "$(dirname "$CORTEX_BIN")" && pwd)/$(basename "$CORTEX_BIN")"
export CORTEX_BIN

# Both SDKs declare engines node >=20 (@modelcontextprotocol/client 2.x and
# @modelcontextprotocol/core: ">=20"; @modelcontextprotocol/sdk 1.x: ">=18"),
# so the system node is used; a pinned Node is not needed.
NODE="${NODE:-node}"
if ! command -v "$NODE" >/dev/null 2>&1; then
    echo "run.sh: node not found (need Node >= 20; Debian: apt-get install nodejs npm)" >&2
    exit 2
fi
node_major="$("$NODE" -p 'process.versions.node.split(".")[0]')"
if (( node_major < 20 )); then
    echo "run.sh: $("$NODE" --version) is too old; the MCP SDK packages need Node >= 20" >&2
    exit 2
fi

if [[ ! -d node_modules/@modelcontextprotocol/client || ! -d node_modules/@modelcontextprotocol/sdk || ! -d node_modules/smtp-server || ! -d node_modules/mcp-remote ]]; then
    npm ci --no-audit --no-fund --prefer-offline
fi

if (( $# > 0 )); then
    scripts=("$@")
else
    scripts=(v1_http.mjs v1_stdio.mjs v2_http.mjs v1_triage.mjs v1_actions.mjs v1_elicit.mjs v1_oauth.mjs v2_oauth.mjs v1_resources.mjs v2_resources.mjs v2_listen.mjs v1_tasks.mjs mcp_remote.mjs progress.mjs)
fi

failed_scripts=()
total_passed=0
total_failed=0
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for script in "${scripts[@]}"; do
    echo "=== $script ($("$NODE" --version))"
    rc=0
    "$NODE" "$script" 2>&1 | tee "$log" || rc=$?
    # Each script ends with "<suite>: N passed, N failed".
    tally="$(grep -E '^[A-Za-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)"
    if [[ -n "$tally" ]]; then
        p="$(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$tally")"
        f="$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$tally")"
    else
        p=0 f=1   # crashed before printing a tally
    fi
    if (( rc != 0 && f == 0 )); then f=1; fi
    total_passed=$(( total_passed + p ))
    total_failed=$(( total_failed + f ))
    if (( rc != 0 )); then
        failed_scripts+=("$script")
    fi
done

echo "=== scripts failed: ${failed_scripts[*]:-none}"
echo "clients: ${total_passed} passed, ${total_failed} failed"
if (( ${#failed_scripts[@]} > 0 || total_failed > 0 )); then
    exit 1
fi
