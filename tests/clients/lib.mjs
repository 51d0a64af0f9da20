// Shared helpers for the MCP SDK client interop scripts.
//
// Each script: creates its own temp data dir, mints a token with the CLI,
// optionally starts `cortex serve` on a free loopback port, runs checks, and
// always tears the server down. Every check prints one PASS/FAIL line; the
// script ends with "<suite>: N passed, N failed" and exits non-zero when any
// check failed or when fewer checks ran than the script expected (so a script
// can never pass vacuously).

import { spawn, execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual, inspect } from 'node:util';

export const CORTEX_BIN = process.env.CORTEX_BIN;

// ---------------------------------------------------------------- assertions

export class CheckFailure extends Error {}

export function expect(cond, message) {
    if (!cond) throw new CheckFailure(message);
}

export function expectEqual(actual, expected, what) {
    if (!isDeepStrictEqual(actual, expected)) {
        throw new CheckFailure(`${what}: expected ${show(expected)}, got ${show(actual)}`);
    }
}

export function show(v) {
    return inspect(v, { depth: 6, breakLength: Infinity, maxStringLength: 400 });
}

/** Parses content[0].text of a tool result and checks it equals structuredContent. */
export function expectTextMirrorsStructured(result, what) {
    expect(Array.isArray(result?.content) && result.content.length > 0, `${what}: result has no content[]: ${show(result)}`);
    const first = result.content[0];
    expectEqual(first.type, 'text', `${what}: content[0].type`);
    expect(typeof first.text === 'string', `${what}: content[0].text is not a string`);
    let parsed;
    try {
        parsed = JSON.parse(first.text);
    } catch (e) {
        throw new CheckFailure(`${what}: content[0].text is not JSON (${e.message}): ${show(first.text)}`);
    }
    expect(
        result.structuredContent !== null && typeof result.structuredContent === 'object',
        `${what}: structuredContent missing or not an object: ${show(result.structuredContent)}`
    );
    expectEqual(parsed, result.structuredContent, `${what}: JSON.parse(content[0].text) vs structuredContent`);
    return parsed;
}

/** Checks a tool-error result of the shape {status:"error", error: code, message}. */
export function expectToolError(result, code, what) {
    expectEqual(result?.isError, true, `${what}: isError`);
    const body = expectTextMirrorsStructured(result, what);
    expectEqual(body.status, 'error', `${what}: body.status`);
    expectEqual(body.error, code, `${what}: body.error`);
    expect(typeof body.message === 'string' && body.message.length > 0, `${what}: body.message must be a non-empty string, got ${show(body.message)}`);
    return body;
}

/** Checks the workspace.status result against the expected workspace name. */
export function expectWorkspaceStatus(result, workspace, what) {
    expect(result?.isError !== true, `${what}: unexpected isError: ${show(result)}`);
    const body = expectTextMirrorsStructured(result, what);
    expectEqual(body.workspace, workspace, `${what}: structuredContent.workspace`);
    for (const field of ['world_version', 'agent_version', 'entities', 'episodes']) {
        expect(field in body && body[field] !== null, `${what}: structuredContent.${field} missing: ${show(body)}`);
    }
    for (const field of ['entities', 'episodes']) {
        expect(Number.isInteger(body[field]) && body[field] >= 0, `${what}: structuredContent.${field} must be a count (integer >= 0), got ${show(body[field])}`);
    }
    return body;
}

/** Checks tools/list output for the two tools every Cortex server must expose. */
export function expectCoreTools(tools, what) {
    expect(Array.isArray(tools), `${what}: tools is not an array`);
    const byName = new Map(tools.map(t => [t.name, t]));
    for (const name of ['workspace.status', 'entity.lookup']) {
        const tool = byName.get(name);
        expect(tool, `${what}: tool ${name} not listed (have: ${[...byName.keys()].join(', ')})`);
        expect(tool.inputSchema && tool.inputSchema.type === 'object', `${what}: ${name}.inputSchema must be an object schema: ${show(tool.inputSchema)}`);
        expect(tool.outputSchema && tool.outputSchema.type === 'object', `${what}: ${name}.outputSchema must be an object schema: ${show(tool.outputSchema)}`);
    }
    const lookup = byName.get('entity.lookup');
    expect(
        Array.isArray(lookup.inputSchema.required) && lookup.inputSchema.required.includes('identifier'),
        `${what}: entity.lookup.inputSchema.required must include "identifier": ${show(lookup.inputSchema)}`
    );
    expectEqual(lookup.inputSchema.properties?.identifier?.type, 'string', `${what}: entity.lookup identifier type`);
    return byName;
}

/** Checks that an SDK client's onerror saw nothing (`errors`: what it collected). */
export function expectNoTransportErrors(errors) {
    expect(errors.length === 0, `client.onerror saw: ${errors.map(describeError).join(' | ')}`);
}

/** Connects `client` over `transport`, expecting a refusal; returns the error (always closes). */
export async function connectError(client, transport, timeout = 10_000) {
    let err;
    try {
        await client.connect(transport, { timeout });
    } catch (e) {
        err = e;
    } finally {
        await client.close().catch(() => {});
    }
    return err;
}

/** Stops a server from startServer with SIGTERM and expects exit code 0. */
export async function expectSigtermExit0(server) {
    const { code, signal } = await server.stop();
    expect(code === 0, `exit code ${code}, signal ${signal}`);
}

// ---------------------------------------------------------------- check runner

export class Suite {
    constructor(name, expectedChecks) {
        this.name = name;
        this.expectedChecks = expectedChecks;
        this.passed = 0;
        this.failed = 0;
        this.cleanups = [];
    }

    /**
     * Runs one named check. On failure prints FAIL and, when `fatal`, throws
     * so the script stops (remaining checks count as not run => failure).
     */
    async check(name, fn, { fatal = false } = {}) {
        try {
            const value = await fn();
            this.passed++;
            console.log(`PASS ${this.name}: ${name}`);
            return value;
        } catch (err) {
            this.failed++;
            const detail = err instanceof CheckFailure ? err.message : describeError(err);
            console.log(`FAIL ${this.name}: ${name} -- ${detail}`);
            if (fatal) throw new FatalStop(name);
            return undefined;
        }
    }

    info(message) {
        console.log(`INFO ${this.name}: ${message}`);
    }

    onCleanup(fn) {
        this.cleanups.unshift(fn);
    }

    async runCleanups() {
        const list = this.cleanups;
        this.cleanups = [];
        for (const fn of list) {
            try {
                await fn();
            } catch (err) {
                console.log(`INFO ${this.name}: cleanup error: ${describeError(err)}`);
            }
        }
    }

    /** Runs `body`, then cleanups, prints the tally and exits the process. */
    async run(body) {
        installExitGuards(this);
        let aborted = false;
        try {
            await body(this);
        } catch (err) {
            aborted = true;
            if (!(err instanceof FatalStop)) {
                this.failed++;
                console.log(`FAIL ${this.name}: unexpected exception -- ${describeError(err)}`);
            }
        } finally {
            await this.runCleanups();
        }
        const ran = this.passed + this.failed;
        if (ran < this.expectedChecks) {
            const missing = this.expectedChecks - ran;
            console.log(`FAIL ${this.name}: ${missing} of ${this.expectedChecks} expected checks did not run${aborted ? ' (stopped after a fatal failure)' : ''}`);
            this.failed += missing;
        }
        console.log(`${this.name}: ${this.passed} passed, ${this.failed} failed`);
        process.exitCode = this.failed === 0 && this.passed >= this.expectedChecks ? 0 : 1;
        // Open sockets/streams from SDK internals must not keep us alive.
        setTimeout(() => process.exit(process.exitCode), 200).unref();
    }
}

class FatalStop extends Error {}

export function describeError(err) {
    if (!(err instanceof Error)) return show(err);
    const parts = [`${err.name}: ${err.message}`];
    if (err.code !== undefined) parts.push(`code=${show(err.code)}`);
    if (err.data !== undefined) parts.push(`data=${show(err.data)}`);
    if (err.cause !== undefined) parts.push(`cause=${err.cause instanceof Error ? err.cause.message : show(err.cause)}`);
    return parts.join(' ');
}

// Server processes we started; killed hard if the script dies unexpectedly.
const liveChildren = new Set();

function installExitGuards(suite) {
    process.on('exit', () => {
        for (const child of liveChildren) {
            try {
                child.kill('SIGKILL');
            } catch {}
        }
    });
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
        process.on(sig, async () => {
            console.log(`FAIL ${suite.name}: interrupted by ${sig}`);
            await suite.runCleanups();
            process.exit(1);
        });
    }
}

// ---------------------------------------------------------------- environment

export function requireCortexBin() {
    if (!CORTEX_BIN) throw new CheckFailure('CORTEX_BIN is not set (path to the cortex binary)');
    return CORTEX_BIN;
}

export async function makeDataDir(suite, label) {
    const dir = await mkdtemp(join(tmpdir(), `cortex-${label}-`));
    suite.onCleanup(() => rm(dir, { recursive: true, force: true }));
    return dir;
}

export function freePort() {
    return new Promise((resolve, reject) => {
        const srv = createServer();
        srv.unref();
        srv.on('error', reject);
        srv.listen(0, '127.0.0.1', () => {
            const { port } = srv.address();
            srv.close(() => resolve(port));
        });
    });
}

function execCapture(file, args, options = {}) {
    return new Promise(resolve => {
        execFile(file, args, { timeout: 30_000, maxBuffer: 1 << 20, ...options }, (error, stdout, stderr) => {
            resolve({ error, code: error ? (error.code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) });
        });
    });
}

/** `cortex token create` — stdout must be just the bearer token. */
export async function createToken(dataDir, workspace, scopes = 'read,act') {
    const bin = requireCortexBin();
    const args = ['token', 'create', '--data', dataDir, '--workspace', workspace, '--scopes', scopes];
    const r = await execCapture(bin, args);
    expect(r.code === 0, `\`cortex ${args.join(' ')}\` exited ${show(r.code)}; stderr: ${r.stderr.trim() || '(empty)'}`);
    const token = r.stdout.trim();
    expect(token.length > 0, 'token create printed nothing on stdout');
    expect(!/\s/.test(token), `token create must print only the token, got ${show(r.stdout)}`);
    return token;
}

function tail(text, max = 2000) {
    return text.length > max ? '...' + text.slice(-max) : text;
}

/**
 * Starts `cortex serve` and waits for GET /healthz == 200. Registers a
 * cleanup that SIGKILLs it if the script did not stop it itself. `args` are
 * extra `cortex serve` arguments (e.g. ['--config', FILE]).
 */
export async function startServer(suite, dataDir, { readyTimeoutMs = 20_000, args = [] } = {}) {
    const bin = requireCortexBin();
    const port = await freePort();
    const listen = `127.0.0.1:${port}`;
    const child = spawn(bin, ['serve', '--data', dataDir, '--listen', listen, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    liveChildren.add(child);
    let output = '';
    child.stdout.on('data', d => (output += d));
    child.stderr.on('data', d => (output += d));
    const exited = new Promise(resolve => {
        child.on('exit', (code, signal) => {
            liveChildren.delete(child);
            resolve({ code, signal });
        });
        child.on('error', err => {
            liveChildren.delete(child);
            resolve({ code: null, signal: null, error: err });
        });
    });
    let exitInfo;
    exited.then(info => (exitInfo = info));
    const server = {
        child,
        port,
        baseUrl: `http://127.0.0.1:${port}`,
        mcpUrl: new URL(`http://127.0.0.1:${port}/mcp`),
        exited,
        output: () => output,
        stopped: false,
        /** SIGTERM, wait for exit; returns {code, signal} (or throws on timeout). */
        async stop(timeoutMs = 10_000) {
            this.stopped = true;
            if (exitInfo) return exitInfo;
            child.kill('SIGTERM');
            const timer = new Promise(resolve => setTimeout(() => resolve('timeout'), timeoutMs).unref());
            const r = await Promise.race([exited, timer]);
            if (r === 'timeout') {
                child.kill('SIGKILL');
                throw new CheckFailure(`server did not exit within ${timeoutMs}ms of SIGTERM`);
            }
            return r;
        }
    };
    suite.onCleanup(async () => {
        if (!exitInfo) {
            child.kill('SIGKILL');
            await exited;
        }
        if (suite.failed > 0 && output.trim()) {
            console.log(`---- cortex serve output (tail) ----\n${tail(output)}\n------------------------------------`);
        }
    });

    const deadline = Date.now() + readyTimeoutMs;
    let lastErr = 'no attempt';
    while (Date.now() < deadline) {
        if (exitInfo) {
            const why = exitInfo.error ? exitInfo.error.message : `code=${exitInfo.code} signal=${exitInfo.signal}`;
            throw new CheckFailure(`cortex serve exited before becoming ready (${why}); output: ${tail(output.trim(), 800) || '(none)'}`);
        }
        try {
            const res = await fetch(`${server.baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) });
            await res.arrayBuffer().catch(() => {});
            if (res.status === 200) return server;
            lastErr = `HTTP ${res.status}`;
        } catch (err) {
            lastErr = err.cause?.code ?? err.message;
        }
        await new Promise(r => setTimeout(r, 100));
    }
    throw new CheckFailure(`GET /healthz not 200 within ${readyTimeoutMs}ms (last: ${lastErr})`);
}

/** A valid 2025-11-25 initialize request body, for raw HTTP probes. */
export function initializeBody(protocolVersion = '2025-11-25') {
    return {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion, capabilities: {}, clientInfo: { name: 'cortex-raw-probe', version: '0.0.0' } }
    };
}

/** POST a JSON-RPC body to /mcp with the given headers; returns {status, headers, text}. */
export async function rawPost(url, body, headers = {}) {
    const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000)
    });
    const text = await res.text().catch(() => '');
    return { status: res.status, headers: res.headers, text };
}

/**
 * Records the JSON-RPC traffic of an SDK transport (works for v1 and v2, HTTP
 * and stdio): wraps send() and pre-sets onmessage, which Protocol.connect
 * chains. Returns {sent, received}.
 */
export function tapTransport(transport) {
    const sent = [];
    const received = [];
    const origSend = transport.send.bind(transport);
    transport.send = (message, options) => {
        sent.push(message);
        return origSend(message, options);
    };
    transport.onmessage = message => {
        received.push(message);
    };
    return { sent, received };
}

/** Finds the response (in `received`) to the first request in `sent` with `method`. */
export function responseTo(tap, method) {
    const req = tap.sent.find(m => m && m.method === method && m.id !== undefined);
    if (!req) return undefined;
    return tap.received.find(m => m && m.id === req.id && ('result' in m || 'error' in m));
}
