"""Shared by the multi-instance tests: a PostgreSQL cluster (scripts/pg), fresh databases,
the `cortex` CLI on them, `cortex serve` instances, and stateless MCP tool calls.

The cluster: $CORTEX_PG_DIR (one started by `scripts/pg start`) if set, where fresh
databases are created; otherwise a private one in a temporary folder, stopped by
stop_cluster()."""

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORTEX_BIN = os.environ.get("CORTEX_BIN", os.path.join(REPO, "build", "cortex"))
PG_SCRIPT = os.path.join(REPO, "scripts", "pg")

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
SECRET = "multi-instance-webhook-secret"
ENTRIES_RE = re.compile(r"^(\S+): ok, (\d+) entries$", re.M)

# Filled in by start_cluster().
M = {}


def start_cluster(prefix):
    """A temporary folder for logs (M["tmp"], M["log_dir"]) and the cluster (M["pg_dir"])."""
    M["tmp"] = tempfile.mkdtemp(prefix=prefix)
    M["log_dir"] = os.path.join(M["tmp"], "logs")
    os.makedirs(M["log_dir"])
    if os.environ.get("CORTEX_PG_DIR"):
        M["pg_dir"], M["own_pg"] = os.environ["CORTEX_PG_DIR"], False
    else:
        # Its own folder (not under M["tmp"]): as root, scripts/pg hands it to `postgres`.
        M["pg_dir"], M["own_pg"] = tempfile.mkdtemp(prefix=prefix + "pg-"), True
        pg("start", M["pg_dir"])


def stop_cluster():
    """Stops every instance, then the cluster if it is ours, and removes the folders."""
    for inst in Instance.ALL:
        inst.stop()
    if M.get("own_pg"):
        try:
            pg("stop", M["pg_dir"])
        finally:
            shutil.rmtree(M["pg_dir"], ignore_errors=True)
    if "tmp" in M:
        shutil.rmtree(M["tmp"], ignore_errors=True)


def pg(*args):
    p = subprocess.run([PG_SCRIPT, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"scripts/pg {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""


def new_database(tag):
    name = f"cortex_multi_{tag}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    return pg("createdb", M["pg_dir"], name)


def cli(database, *args, stdin=None, check=True):
    """`cortex ARGS... --database URL`; returns the CompletedProcess."""
    p = subprocess.run([CORTEX_BIN, *args, "--database", database], input=stdin,
                       capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"cortex {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def create_token(database, workspace, scopes="read,act", label="multi"):
    out = cli(database, "token", "create", "--workspace", workspace, "--scopes", scopes,
              "--label", label).stdout
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("ctk_"), out
    return lines[0]


def ledger_verify(database, workspace=None):
    """Returns (exit code, output, {workspace: entries} of the chains reported ok)."""
    args = ["ledger", "verify"] + (["--workspace", workspace] if workspace else [])
    p = cli(database, *args, check=False)
    out = p.stdout + p.stderr
    return p.returncode, out, {m.group(1): int(m.group(2)) for m in ENTRIES_RE.finditer(out)}


def write_config(path, receiver_url=None, undo_window_seconds=1, draft_expiry_minutes=1440):
    """A config for the instances: deliveries to the webhook at `receiver_url` (if given),
    the flood guard off and quotas out of the way unless a test sets them."""
    big = 1_000_000_000
    delivery = ("\n[delivery]\nconnector = \"webhook\"\n"
                f"webhook_url = \"{receiver_url}\"\nwebhook_secret = \"{SECRET}\"\n"
                "timeout_seconds = 2\nlease_seconds = 3\n") if receiver_url else ""
    with open(path, "w") as f:
        f.write(f"[actions]\ndraft_expiry_minutes = {draft_expiry_minutes}\n"
                f"undo_window_seconds = {undo_window_seconds}\n" + delivery +
                # The tests below send hundreds of requests a second from one address.
                "\n[http]\nflood_requests_per_second = 0\n"
                f"\n[quotas]\ncalls_per_minute = {big}\ncalls_per_day = {big}\n"
                f"token_calls_per_minute = {big}\ntoken_calls_per_day = {big}\n")
    return path


class Instance:
    """One `cortex serve --database URL`, restartable; stderr goes to a log file."""

    ALL = []

    def __init__(self, name, database, config):
        self.name, self.database, self.config = name, database, config
        self.proc, self.port, self.incarnation, self.logs = None, None, 0, []
        Instance.ALL.append(self)
        self.start()

    def start(self, timeout=20):
        assert self.proc is None, f"{self.name} is already running"
        self.incarnation += 1
        log_path = os.path.join(M["log_dir"], f"{self.name}-{self.incarnation}.log")
        self.logs.append(log_path)
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [CORTEX_BIN, "serve", "--database", self.database, "--listen", "127.0.0.1:0",
                 "--config", self.config, "--threads", "4"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        pattern = re.compile(rb"listening on http://127\.0\.0\.1:(\d+)/mcp")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode} at start:\n"
                                   f"{self.tail()}")
            with open(log_path, "rb") as f:
                m = pattern.search(f.read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.02)
        else:
            self.kill9()
            raise RuntimeError(f"{self.name} never said where it listens:\n{self.tail()}")
        while time.monotonic() < deadline:
            try:
                if http_request(self.port, "GET", "/healthz", timeout=2)[0] == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.02)
        raise RuntimeError(f"{self.name}: GET /healthz never answered 200:\n{self.tail()}")

    def kill9(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc, self.port = None, None

    def stop(self, timeout=10):
        """SIGTERM (SIGKILL after `timeout`); returns the exit code."""
        if self.proc is None:
            return None
        proc = self.proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = "timeout"
        self.kill9()
        return rc

    def tail(self, n=3000):
        out = []
        for path in self.logs[-2:]:
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            out.append(f"--- {os.path.basename(path)} (last {n} chars) ---\n{text[-n:]}")
        return "\n".join(out)


def http_request(port, method, path, body=None, headers=None, timeout=15, conn=None):
    """Returns (status, {lowercased header: value}, body bytes)."""
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        if own:
            conn.close()


def rpc_body(data, ctype):
    text = data.decode("utf-8", "replace")
    if "text/event-stream" in (ctype or ""):
        payloads = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
        text = payloads[-1] if payloads else ""
    return json.loads(text)


_ids = iter(range(1, 1 << 30))


def tool_request(token, name, args):
    msg = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call",
           "params": {"name": name, "arguments": args, "_meta": {
               "io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "multi", "version": "1.0.0"}}}}
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "Authorization": "Bearer " + token, "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": name}
    return json.dumps(msg).encode(), headers


def call(inst, token, name, args=None, conn=None):
    """A stateless tools/call through `inst`; returns (tool body, isError). Anything but a
    tool result (HTTP error, JSON-RPC error) fails the test with what came back."""
    body, headers = tool_request(token, name, args or {})
    status, h, data = http_request(inst.port, "POST", "/mcp", body, headers, conn=conn)
    try:
        doc = rpc_body(data, h.get("content-type"))
        result = doc["result"]
        return result["structuredContent"], bool(result.get("isError"))
    except (ValueError, KeyError, TypeError):
        raise AssertionError(
            f"{name} through {inst.name}: HTTP {status}: {data[:400]!r}") from None


def ok(inst, token, name, args=None):
    body, is_error = call(inst, token, name, args)
    if is_error:
        raise AssertionError(f"{name} {args} through {inst.name} failed: {body}")
    return body
