// Helpers for the web inbox tests: the cortex CLI, a `cortex serve` on a free loopback port,
// MCP tool calls as the agent makes them, and Debian's Chromium driven by playwright-core.

import { spawn, execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const CORTEX_BIN = process.env.CORTEX_BIN;
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const HERE = dirname(fileURLToPath(import.meta.url));
export const ARTIFACTS = join(HERE, 'artifacts');
export const WORKSPACE = 'demo';

if (!CORTEX_BIN) throw new Error('set CORTEX_BIN to the cortex binary (tests/browser/run.sh does)');

// Servers we started: killed hard if the test process dies before stopping them.
const live = new Set();
process.on('exit', () => {
    for (const child of live) {
        try {
            child.kill('SIGKILL');
        } catch {}
    }
});

/** Runs the cortex CLI; resolves to its stdout, rejects with its stderr in the message. */
export function cli(args, { env = {} } = {}) {
    return new Promise((resolve, reject) => {
        execFile(CORTEX_BIN, args, { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
            if (err) reject(new Error(`cortex ${args.join(' ')} failed (${err.code ?? err.signal}): ${stderr || stdout}`));
            else resolve(stdout);
        });
    });
}

/**
 * A fresh data dir with the demo workspace and an agent token (read,act), and a config
 * that appends every delivered message to delivered.jsonl there.
 */
export async function makeWorkspace({ env = {} } = {}) {
    const dir = await mkdtemp(join(tmpdir(), 'cortex-browser-'));
    await cli(['demo', '--data', dir], { env });
    const token = (await cli(['token', 'create', '--data', dir, '--workspace', WORKSPACE, '--scopes', 'read,act',
        '--label', 'browser tests: the agent'], { env })).trim();
    if (!/^\S+$/.test(token)) throw new Error(`token create printed ${JSON.stringify(token)}`);
    const delivered = join(dir, 'delivered.jsonl');
    const config = join(dir, 'cortex.toml');
    await writeFile(config, `[delivery]\nconnector = "outbox"\njsonl_path = ${JSON.stringify(delivered)}\n`);
    return { dir, token, delivered, config, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Starts `cortex serve` on 127.0.0.1:0 and waits for "listening on http://127.0.0.1:PORT/mcp"
 * (stdout or stderr). stop() sends SIGTERM (SIGKILL after 5 s) and waits for the exit.
 */
export async function startServer(ws, { env = {}, logName = 'server' } = {}) {
    const args = ['serve', '--data', ws.dir, '--listen', '127.0.0.1:0', '--config', ws.config];
    const child = spawn(CORTEX_BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(child);
    let log = '';
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => {
        live.delete(child);
        resolve({ code, signal });
    }));
    const port = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`cortex serve printed no "listening on" line in 15 s:\n${log}`)), 15_000);
        const onData = (chunk) => {
            log += chunk;
            const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(log);
            if (m) {
                clearTimeout(timer);
                resolve(Number(m[1]));
            }
        };
        child.stdout.setEncoding('utf8').on('data', onData);
        child.stderr.setEncoding('utf8').on('data', onData);
        child.on('exit', (code, signal) => {
            clearTimeout(timer);
            reject(new Error(`cortex serve exited (${code ?? signal}) before listening:\n${log}`));
        });
    });
    const base = `http://127.0.0.1:${port}`;
    return {
        port,
        base,
        log: () => log,
        async stop() {
            if (child.exitCode === null && child.signalCode === null) {
                child.kill('SIGTERM');
                const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
                await exited;
                clearTimeout(t);
            }
            await mkdir(ARTIFACTS, { recursive: true });
            await writeFile(join(ARTIFACTS, `${logName}.log`), log);
        },
    };
}

/** `cortex inbox link`: the one-time sign-in URL it prints. */
export async function signInLink(ws, server, { env = {} } = {}) {
    const out = await cli(['inbox', 'link', '--data', ws.dir, '--workspace', WORKSPACE, '--base-url', server.base], { env });
    const lines = out.trim().split('\n').filter((l) => /^https?:\/\//.test(l.trim()));
    if (lines.length !== 1) throw new Error(`cortex inbox link printed no single URL: ${JSON.stringify(out)}`);
    return lines[0].trim();
}

let rpcId = 0;

/** A tools/call as a stateless-era (2026-07-28) MCP client makes it; resolves to the result. */
export async function callTool(server, token, name, args) {
    const res = await fetch(`${server.base}/mcp`, {
        method: 'POST',
        headers: {
            Authorization: `Bearer ${token}`,
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            'MCP-Protocol-Version': '2026-07-28',
            'Mcp-Method': 'tools/call',
            'Mcp-Name': name,
        },
        body: JSON.stringify({
            jsonrpc: '2.0',
            id: ++rpcId,
            method: 'tools/call',
            params: {
                name,
                arguments: args,
                _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
            },
        }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${name}: HTTP ${res.status}: ${text}`);
    let msg;
    if ((res.headers.get('content-type') || '').includes('text/event-stream')) {
        const data = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
        msg = data.map((d) => JSON.parse(d)).find((m) => m.id === rpcId);
    } else {
        msg = JSON.parse(text);
    }
    if (!msg || msg.error) throw new Error(`${name}: JSON-RPC error: ${text}`);
    return msg.result;
}

/** The agent proposes a message; resolves to the structuredContent (status pending_approval). */
export async function propose(server, token, to, message, extra = {}) {
    const result = await callTool(server, token, 'action.communicate', { to, message, ...extra });
    const sc = result.structuredContent;
    if (result.isError || !sc || sc.status !== 'pending_approval' || !sc.decision_id) {
        throw new Error(`action.communicate to ${to} was not held for approval: ${JSON.stringify(result)}`);
    }
    return sc;
}

/** The action decision as decision.list shows it to the agent (among the newest 100). */
export async function agentSeesDecision(server, token, decisionId) {
    const result = await callTool(server, token, 'decision.list', { decision_class: 'action_proposed', limit: 100 });
    if (result.isError) throw new Error(`decision.list: ${JSON.stringify(result)}`);
    const list = result.structuredContent?.decisions || [];
    return list.find((d) => d.decision_id === decisionId) || null;
}

/** Polls fn until it returns a truthy value or `ms` pass; resolves to the last value. */
export async function eventually(fn, { ms = 10_000, every = 150 } = {}) {
    const end = Date.now() + ms;
    let value;
    for (;;) {
        value = await fn();
        if (value || Date.now() > end) return value;
        await new Promise((r) => setTimeout(r, every));
    }
}

/** Lines of delivered.jsonl (the outbox connector appends each delivered message). */
export async function deliveredMessages(ws) {
    let text = '';
    try {
        text = await readFile(ws.delivered, 'utf8');
    } catch (e) {
        if (e.code !== 'ENOENT') throw e;
    }
    return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

export function launchBrowser() {
    return chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
            '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
}

/**
 * A new browser context (no cookies) at desktop width, in UTC. Every page opened in it
 * records uncaught errors and Content-Security-Policy violations in `problems`.
 */
export async function newContext(browser, { width = 1280, height = 900 } = {}) {
    const context = await browser.newContext({ viewport: { width, height }, timezoneId: 'UTC', locale: 'en-GB' });
    context.setDefaultTimeout(10_000); // a missing control fails in 10 s, not 30
    const problems = [];
    context.on('page', (page) => watch(page, problems));
    return { context, problems };
}

function watch(page, problems) {
    page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
    page.on('console', (msg) => {
        const text = msg.text();
        if (/Content Security Policy|Refused to (execute|apply|load|connect)/i.test(text)) problems.push(`CSP: ${text}`);
    });
}
