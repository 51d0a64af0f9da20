// Official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) client against
// `cortex serve` over Streamable HTTP: the action engine on the demo workspace
// (`cortex demo`) — action.communicate / approve / reject, the approval inbox
// (decision.list status pending), meta.why_this_action; approvals come from a
// person: the agent's read,act token drafts (the result carries the draft) but
// gets `unauthorized` from action.approve / action.reject, which a person's
// read,approve token uses, and the ledger names that token; trust levels set with
// `cortex trust set` while the server runs, and delivery through each
// connector: outbox (JSONL file), webhook (signed, retried on 503), a process
// SIGKILLed between commit and delivery, and SMTP (npm smtp-server); earned
// trust ([trust] approvals_to_raise: approvals raise a level, a rejection
// lowers it but never below 1), five concurrent approvals of one decision on
// five connections, and the OpenAI-compatible model drafter (a fake model)
// with its daily budget.
// `cortex ledger verify` must pass on every data dir at the end.
//
//   CORTEX_BIN=/path/to/cortex node v1_actions.mjs

import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SMTPServer } from 'smtp-server';

import {
    CheckFailure,
    Suite,
    createToken,
    describeError,
    expect,
    expectEqual,
    expectNoTransportErrors,
    expectSigtermExit0,
    expectTextMirrorsStructured,
    expectToolError,
    freePort,
    makeDataDir,
    requireCortexBin,
    show,
    startServer
} from './lib.mjs';

const WORKSPACE = 'demo';
const SARAH = 'sarah.chen@northwind.example';
const MARCUS = 'marcus.webb@harborline.example';
const SEED = {
    to: SARAH,
    message: 'Quick check — does Tuesday 2pm still work?',
    tone: 'warm',
    context: 'Following up on rescheduled 1:1'
};
// The built-in drafter's warm tone: "Hi First," + message + a thank-you.
const SEED_DRAFT = 'Hi Sarah,\n\nQuick check — does Tuesday 2pm still work?\n\nThanks so much!';
const WHY_KEYS = ['action_id', 'rule_summary', 'confidence', 'contributing_episodes', 'agent_version', 'world_version'];
// Why a draft to Sarah is held when no rule speaks for it: her trust, and where it comes from.
const SEED_WHY = 'Held for your approval: trust for communicate with Sarah Chen is level 1 (draft, from built-in default).';
const WEBHOOK_SECRET = 'whsec-interop-test-secret';
const SMTP_FROM = 'cortex@example.test';
const suite = new Suite('v1_actions', 88);

// ---------------------------------------------------------------- helpers

function newClient() {
    return new Client({ name: 'cortex-interop-v1-actions', version: '1.0.0' }, { capabilities: {} });
}

function newTransport(url, token) {
    return new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } }
    });
}

async function connect(server, token, errors) {
    const client = newClient();
    client.onerror = err => errors.push(err);
    await client.connect(newTransport(server.mcpUrl, token), { timeout: 15_000 });
    return client;
}

async function closeClient(client) {
    const t = client.transport;
    if (t?.sessionId) await t.terminateSession();
    await client.close();
}

/** Runs `cortex ARGS...`; resolves {code, stdout, stderr} (never rejects). */
function cortex(...args) {
    const bin = requireCortexBin();
    return new Promise(resolve => {
        execFile(bin, args, { timeout: 60_000, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
            resolve({ code: error ? (error.code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) });
        });
    });
}

async function cortexOk(...args) {
    const r = await cortex(...args);
    expect(r.code === 0, `\`cortex ${args.join(' ')}\` exited ${show(r.code)}; stderr: ${r.stderr.trim() || '(empty)'}`);
    return r.stdout;
}

const loadDemo = dataDir => cortexOk('demo', '--data', dataDir);
const trustSet = (dataDir, scope, level) =>
    cortexOk('trust', 'set', '--data', dataDir, '--workspace', WORKSPACE, '--scope', scope, '--level', String(level));

/** Calls a tool that must succeed; returns the (text-mirrored) structuredContent. */
async function callOk(client, name, args, what = name) {
    const result = await client.callTool({ name, arguments: args });
    expect(result?.isError !== true, `${what}: unexpected isError: ${show(result?.structuredContent ?? result)}`);
    return expectTextMirrorsStructured(result, what);
}

function sleep(ms) {
    return new Promise(r => setTimeout(r, ms));
}

/** Polls `fn` every 100 ms until it returns a truthy value; throws after `timeoutMs`. */
async function waitFor(fn, timeoutMs, what) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const v = await fn();
        if (v) return v;
        if (Date.now() >= deadline) throw new CheckFailure(`${what}: not within ${timeoutMs} ms`);
        await sleep(100);
    }
}

function expectId(v, prefix, what) {
    expect(typeof v === 'string' && v.startsWith(prefix) && v.length > prefix.length, `${what} must be a ${prefix}... id, got ${show(v)}`);
}

/** An action result that is not an error: {status, decision_id dec_, action_id act_, message, draft}. */
async function communicate(client, args, expectedStatus, what = 'action.communicate') {
    const body = await callOk(client, 'action.communicate', args, what);
    expectEqual(body.status, expectedStatus, `${what}: status (message: ${show(body.message)})`);
    expectId(body.decision_id, 'dec_', `${what}: decision_id`);
    expectId(body.action_id, 'act_', `${what}: action_id`);
    expect(typeof body.message === 'string' && body.message.length > 0, `${what}: message: ${show(body.message)}`);
    // The text that is sent, or that a person is asked to approve.
    expect(typeof body.draft === 'string' && body.draft.length > 0, `${what}: draft: ${show(body.draft)}`);
    return body;
}

/**
 * A person's token (read,approve): approves and rejects what the agent drafts.
 * Resolves {token, id}, id being its tok_... id from `cortex token list`.
 */
async function createPersonToken(dataDir, label = 'person') {
    const token = (await cortexOk('token', 'create', '--data', dataDir, '--workspace', WORKSPACE, '--scopes', 'read,approve', '--label', label)).trim();
    expect(token.length > 0 && !/\s/.test(token), `token create must print only the token, got ${show(token)}`);
    const listing = await cortexOk('token', 'list', '--data', dataDir, '--workspace', WORKSPACE);
    const row = listing.split('\n').map(l => l.split('\t')).find(cols => cols[4] === label);
    expect(row, `no token labelled ${label} in: ${show(listing)}`);
    expectId(row[0], 'tok_', 'token id');
    expectEqual(row[1], 'read,approve', 'scopes listed for the person token');
    return { token, id: row[0] };
}

/** The agent's token calling action.approve / action.reject: isError unauthorized, naming the approve scope. */
async function expectAgentRefused(client, tool, args) {
    const result = await client.callTool({ name: tool, arguments: args });
    const body = expectToolError(result, 'unauthorized', `${tool} with the agent's token`);
    expectEqual(body.message, `this token lacks the 'approve' scope that ${tool} needs`, `${tool} with the agent's token: message`);
    return body;
}

/**
 * A decision's ledger entries, oldest first ([{event, detail}]), read from the data
 * dir's SQLite store with python3 (the end-to-end tests' interpreter): no tool shows
 * who approved or rejected.
 */
function ledgerOf(dataDir, decisionId) {
    const script = [
        'import json, sqlite3, sys',
        'db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=10)',
        'rows = db.execute("SELECT event, detail FROM ledger WHERE decision_id = ? ORDER BY seq", (sys.argv[2],))',
        'print(json.dumps([{"event": e, "detail": json.loads(d)} for e, d in rows]))'
    ].join('\n');
    return new Promise((resolve, reject) => {
        execFile('python3', ['-c', script, join(dataDir, 'cortex.db'), decisionId], { timeout: 30_000 }, (error, stdout, stderr) => {
            if (error) reject(new CheckFailure(`reading the ledger of ${decisionId}: ${String(stderr).trim() || error.message}`));
            else resolve(JSON.parse(String(stdout)));
        });
    });
}

/** Every decision.list row with the given filters (paging to the end). */
async function listDecisions(client, filters) {
    const all = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
        const args = { ...filters, limit: 100, ...(cursor ? { cursor } : {}) };
        const body = await callOk(client, 'decision.list', args, `decision.list(${JSON.stringify(args)})`);
        all.push(...body.decisions);
        if (body.next_cursor === undefined) return all;
        cursor = body.next_cursor;
    }
    throw new CheckFailure('decision.list paging did not end after 100 pages');
}

async function decisionStatus(client, decisionId) {
    const rows = await listDecisions(client, { decision_class: 'action_proposed' });
    return rows.find(d => d.decision_id === decisionId)?.status;
}

async function waitForStatus(client, decisionId, status, timeoutMs) {
    let last;
    try {
        await waitFor(async () => (last = await decisionStatus(client, decisionId)) === status, timeoutMs, 'decision status');
    } catch (e) {
        if (e instanceof CheckFailure) throw new CheckFailure(`decision ${decisionId} status: expected ${show(status)} within ${timeoutMs} ms, last ${show(last)}`);
        throw e;
    }
}

async function readJsonl(path) {
    let text;
    try {
        text = await readFile(path, 'utf8');
    } catch (e) {
        if (e.code === 'ENOENT') return [];
        throw e;
    }
    return text
        .split('\n')
        .filter(l => l.trim() !== '')
        .map((l, i) => {
            try {
                return JSON.parse(l);
            } catch (err) {
                throw new CheckFailure(`${path} line ${i + 1} is not JSON (${err.message}): ${show(l)}`);
            }
        });
}

async function writeConfig(dir, name, delivery) {
    return writeToml(dir, name, { delivery });
}

/** Writes a TOML config of {section: {key: value}} (strings quoted, numbers bare). */
async function writeToml(dir, name, sections) {
    const lines = [];
    for (const [section, keys] of Object.entries(sections)) {
        lines.push(`[${section}]`);
        for (const [k, v] of Object.entries(keys)) lines.push(`${k} = ${typeof v === 'string' ? JSON.stringify(v) : v}`);
        lines.push('');
    }
    const path = join(dir, name);
    await writeFile(path, lines.join('\n'));
    return path;
}

/**
 * A fake OpenAI-compatible model on 127.0.0.1: POST /v1/chat/completions
 * answers "MODEL: <first line of the last user message>"; records every request.
 */
function startModelServer(suite) {
    const requests = [];
    const server = createHttpServer((req, res) => {
        const chunks = [];
        req.on('data', c => chunks.push(c));
        req.on('end', () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            let body;
            try {
                body = JSON.parse(raw);
            } catch {
                body = undefined;
            }
            requests.push({ at: Date.now(), method: req.method, url: req.url, raw, body });
            if (req.method !== 'POST' || req.url !== '/v1/chat/completions' || !body) {
                res.writeHead(404, { 'content-type': 'text/plain' });
                res.end('not found');
                return;
            }
            const users = (Array.isArray(body.messages) ? body.messages : []).filter(m => m?.role === 'user');
            const last = String(users.at(-1)?.content ?? '');
            const answer = { choices: [{ index: 0, message: { role: 'assistant', content: `MODEL: ${last.split('\n')[0]}` } }] };
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify(answer));
        });
    });
    const closed = new Promise(resolve => server.on('close', resolve));
    const model = {
        requests,
        url: '',
        async close() {
            server.closeAllConnections?.();
            server.close();
            await closed;
        }
    };
    suite.onCleanup(() => (server.listening ? model.close() : undefined));
    return new Promise((resolve, reject) => {
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            model.url = `http://127.0.0.1:${server.address().port}/v1/chat/completions`;
            resolve(model);
        });
    });
}

/**
 * A webhook receiver on 127.0.0.1: answers 503 to the first `failFirst`
 * POSTs, then 200; records every POST with its signature check.
 */
function startWebhookReceiver(suite, { port = 0, failFirst = 0 } = {}) {
    const posts = [];
    const server = createHttpServer((req, res) => {
        const chunks = [];
        req.on('data', c => chunks.push(c));
        req.on('end', () => {
            const raw = Buffer.concat(chunks);
            const expected = 'sha256=' + createHmac('sha256', WEBHOOK_SECRET).update(raw).digest('hex');
            const status = posts.length < failFirst ? 503 : 200;
            let body;
            try {
                body = JSON.parse(raw.toString('utf8'));
            } catch {
                body = undefined;
            }
            posts.push({
                at: Date.now(),
                method: req.method,
                url: req.url,
                signature: req.headers['x-cortex-signature'],
                signatureOk: req.headers['x-cortex-signature'] === expected,
                idempotencyKey: req.headers['idempotency-key'],
                contentType: req.headers['content-type'],
                raw: raw.toString('utf8'),
                body,
                status
            });
            res.writeHead(status, { 'content-type': 'text/plain' });
            res.end(status === 200 ? 'ok' : 'try later');
        });
    });
    const closed = new Promise(resolve => server.on('close', resolve));
    const receiver = {
        posts,
        port: 0,
        url: '',
        async close() {
            server.closeAllConnections?.();
            server.close();
            await closed;
        }
    };
    suite.onCleanup(() => (server.listening ? receiver.close() : undefined));
    return new Promise((resolve, reject) => {
        server.on('error', reject);
        server.listen(port, '127.0.0.1', () => {
            receiver.port = server.address().port;
            receiver.url = `http://127.0.0.1:${receiver.port}/hooks/cortex`;
            resolve(receiver);
        });
    });
}

/** An SMTP server on 127.0.0.1 (no TLS, no auth) collecting raw messages. */
function startSmtpReceiver(suite) {
    const messages = [];
    const server = new SMTPServer({
        authOptional: true,
        disabledCommands: ['STARTTLS'],
        logger: false,
        onData(stream, session, callback) {
            const chunks = [];
            stream.on('data', c => chunks.push(c));
            stream.on('end', () => {
                messages.push({
                    at: Date.now(),
                    mailFrom: session.envelope.mailFrom?.address,
                    rcptTo: session.envelope.rcptTo.map(r => r.address),
                    raw: Buffer.concat(chunks).toString('utf8')
                });
                callback();
            });
        }
    });
    const receiver = {
        messages,
        port: 0,
        close: () => new Promise(resolve => server.close(resolve))
    };
    let listening = false;
    suite.onCleanup(() => (listening ? receiver.close() : undefined));
    return new Promise((resolve, reject) => {
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            listening = true;
            receiver.port = server.server.address().port;
            resolve(receiver);
        });
    });
}

/** Splits a raw RFC 5322 message into {headers: Map(lowercase name -> value), body (LF line ends)}. */
function parseMail(raw) {
    const text = raw.replace(/\r\n/g, '\n');
    const split = text.indexOf('\n\n');
    expect(split >= 0, `message has no header/body separator: ${show(raw)}`);
    const headers = new Map();
    for (const line of text.slice(0, split).replace(/\n[ \t]+/g, ' ').split('\n')) {
        const colon = line.indexOf(':');
        if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    let body = text.slice(split + 2);
    if ((headers.get('content-transfer-encoding') ?? '').toLowerCase() === 'quoted-printable') {
        // Soft line breaks go; =XX are bytes of the UTF-8 text.
        const bytes = [];
        const qp = body.replace(/=\n/g, '');
        for (let i = 0; i < qp.length; i++) {
            if (qp[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(qp.slice(i + 1, i + 3))) {
                bytes.push(parseInt(qp.slice(i + 1, i + 3), 16));
                i += 2;
            } else {
                bytes.push(...Buffer.from(qp[i], 'utf8'));
            }
        }
        body = Buffer.from(bytes).toString('utf8');
    }
    return { headers, body };
}

// ---------------------------------------------------------------- the script

await suite.run(async s => {
    const started = Date.now();
    const dataDirs = [];
    const files = await makeDataDir(s, 'v1actions-files');

    // ================================================================ A: outbox connector
    const dirA = await makeDataDir(s, 'v1actions-outbox');
    dataDirs.push(['outbox', dirA]);
    const jsonlPath = join(files, 'delivered.jsonl');
    const configA = await writeConfig(files, 'outbox.toml', { connector: 'outbox', jsonl_path: jsonlPath });

    await s.check('`cortex demo` loads the demo workspace (outbox data dir)', () => loadDemo(dirA), { fatal: true });
    const tokenA = await s.check(`token create for ${WORKSPACE} (scopes read,act: the agent's)`, () => createToken(dirA, WORKSPACE, 'read,act'), { fatal: true });
    const personA = await s.check(`token create for ${WORKSPACE} (scopes read,approve: a person's), listed with its tok_ id`, () => createPersonToken(dirA), { fatal: true });
    const serverA = await s.check('serve --config (outbox connector, jsonl_path) starts; GET /healthz 200', () => startServer(s, dirA, { args: ['--config', configA] }), {
        fatal: true
    });
    const transportErrors = [];
    const client = await s.check('v1 client connects with the read,act token (the agent)', () => connect(serverA, tokenA, transportErrors), { fatal: true });
    const person = await s.check('a second v1 client connects with the read,approve token (the person)', () => connect(serverA, personA.token, transportErrors), { fatal: true });

    await s.check('workspace.status: scopes read,act for the agent, read,approve for the person', async () => {
        expectEqual((await callOk(client, 'workspace.status', {})).scopes, ['read', 'act'], "the agent's scopes");
        expectEqual((await callOk(person, 'workspace.status', {})).scopes, ['read', 'approve'], "the person's scopes");
    });

    // ---- 1. the seed example

    const seed = await s.check('seed example: action.communicate to Sarah (warm) is pending_approval with dec_/act_ ids and the warm draft to approve', async () => {
        const body = await communicate(client, SEED, 'pending_approval', 'action.communicate(seed)');
        expectEqual(body.draft, SEED_DRAFT, 'draft');
        return body;
    });

    await s.check('decision.inspect on the seed decision: action_proposed, ledger_entry_id led_...', async () => {
        expect(seed, 'needs the seed action');
        const body = await callOk(client, 'decision.inspect', { decision_id: seed.decision_id });
        expectEqual(body.decision_id, seed.decision_id, 'decision_id');
        expectEqual(body.decision_class, 'action_proposed', 'decision_class');
        expectId(body.ledger_entry_id, 'led_', 'ledger_entry_id');
        expect(body.payload_summary.includes(SARAH), `payload_summary should name the recipient: ${show(body.payload_summary)}`);
    });

    await s.check('meta.why_this_action on the seed action_id: exactly the 6 seed keys', async () => {
        expect(seed, 'needs the seed action');
        const body = await callOk(client, 'meta.why_this_action', { action_id: seed.action_id });
        expectEqual(Object.keys(body).sort(), [...WHY_KEYS].sort(), 'keys of the result');
        expectEqual(body.action_id, seed.action_id, 'action_id');
        // No rule speaks for it: it is explained by Sarah's trust (not by a triage default policy).
        expectEqual(body.rule_summary, SEED_WHY, 'rule_summary');
        expect(['strong_pattern', 'pretty_sure', 'just_guessing'].includes(body.confidence), `confidence: ${show(body.confidence)}`);
        expect(Array.isArray(body.contributing_episodes), `contributing_episodes: ${show(body.contributing_episodes)}`);
        for (const e of body.contributing_episodes) {
            expectId(e?.id, 'ep_', 'contributing episode id');
            expect(typeof e.summary === 'string' && typeof e.occurred_at === 'string', `contributing episode: ${show(e)}`);
        }
        expectId(body.agent_version, 'av_', 'agent_version');
        expectId(body.world_version, 'wv_', 'world_version');
    });

    await s.check('decision.list {status: "pending"} (the approval inbox) holds the seed decision', async () => {
        expect(seed, 'needs the seed action');
        const rows = await listDecisions(client, { status: 'pending' });
        const row = rows.find(d => d.decision_id === seed.decision_id);
        expect(row, `seed decision ${seed.decision_id} not in the inbox: ${show(rows.map(d => d.decision_id))}`);
        expectEqual(row.status, 'pending', 'status');
        expectEqual(row.decision_class, 'action_proposed', 'decision_class');
        for (const d of rows) expectEqual(d.status, 'pending', `status of ${d.decision_id}`);
    });

    await s.check("the agent's token cannot approve or reject the seed (isError unauthorized, naming the approve scope); it stays pending, nothing recorded", async () => {
        expect(seed, 'needs the seed action');
        await expectAgentRefused(client, 'action.approve', { decision_id: seed.decision_id });
        await expectAgentRefused(client, 'action.approve', { decision_id: seed.decision_id, message: 'Approved by the agent itself' });
        await expectAgentRefused(client, 'action.reject', { decision_id: seed.decision_id, reason: 'The agent says no' });
        expectEqual(await decisionStatus(client, seed.decision_id), 'pending', 'decision status');
        expectEqual((await ledgerOf(dirA, seed.decision_id)).map(e => e.event), ['proposed'], 'ledger events');
    });

    let approvedAt;
    await s.check("action.approve on the seed decision with the person's token: success, with the draft", async () => {
        expect(seed, 'needs the seed action');
        const body = await callOk(person, 'action.approve', { decision_id: seed.decision_id });
        approvedAt = Date.now();
        expectEqual(body.status, 'success', `status (message: ${show(body.message)})`);
        expectEqual(body.decision_id, seed.decision_id, 'decision_id');
        expectEqual(body.action_id, seed.action_id, 'action_id');
        expectEqual(body.draft, SEED_DRAFT, 'draft');
    });

    await s.check("the ledger records the approval by the person's token: {edited: false, by: {channel: mcp, token_id}}", async () => {
        expect(seed && personA, 'needs the approved seed action');
        const ledger = await ledgerOf(dirA, seed.decision_id);
        expectEqual(ledger.map(e => e.event).slice(0, 3), ['proposed', 'approved', 'executed'], 'ledger events');
        expectEqual(ledger[0].detail.draft, SEED_DRAFT, 'the proposed draft');
        expectEqual(ledger[1].detail, { edited: false, by: { channel: 'mcp', token_id: personA.id } }, 'the approved entry');
    });

    await s.check('approving it again: isError not_pending, the message says executed or delivered', async () => {
        expect(seed, 'needs the seed action');
        const result = await person.callTool({ name: 'action.approve', arguments: { decision_id: seed.decision_id } });
        const body = expectToolError(result, 'not_pending', 'action.approve(again)');
        expect(/executed|delivered/.test(body.message), `message should say executed or delivered: ${show(body.message)}`);
    });

    // ---- 2. delivery through the outbox connector

    await s.check('outbox: the approved message appears in jsonl_path exactly once, with the warm draft', async () => {
        expect(seed && approvedAt, 'needs the approved seed action');
        const mine = async () => (await readJsonl(jsonlPath)).filter(m => m.action_id === seed.action_id);
        await waitFor(async () => (await mine()).length > 0, 5_000, `a line for ${seed.action_id} in ${jsonlPath}`);
        s.info(`outbox: in the JSONL file ${Date.now() - approvedAt} ms after approval`);
        await sleep(1_000); // a redelivery would show up by now (dispatcher tick 200 ms)
        const lines = await mine();
        expectEqual(lines.length, 1, `lines for ${seed.action_id}`);
        const m = lines[0];
        expectEqual(m.to, SARAH, 'to');
        expectEqual(m.body, SEED_DRAFT, 'body');
        expect(m.body.startsWith('Hi Sarah,'), `body should start "Hi Sarah,": ${show(m.body)}`);
        expect(typeof m.workspace_id === 'string' && m.workspace_id.length > 0, `workspace_id: ${show(m.workspace_id)}`);
    });

    await s.check('after delivery: decision.list shows the seed decision delivered (not in the inbox); approve says delivered', async () => {
        expect(seed, 'needs the seed action');
        await waitForStatus(client, seed.decision_id, 'delivered', 5_000);
        const delivered = await listDecisions(client, { status: 'delivered' });
        expect(delivered.some(d => d.decision_id === seed.decision_id), `seed decision not in decision.list {status: delivered}`);
        const pending = await listDecisions(client, { status: 'pending' });
        expect(!pending.some(d => d.decision_id === seed.decision_id), 'seed decision still in the approval inbox');
        const inspected = await callOk(client, 'decision.inspect', { decision_id: seed.decision_id });
        expectEqual(inspected.decision_class, 'action_proposed', 'decision.inspect decision_class');
        if ('status' in inspected) expectEqual(inspected.status, 'delivered', 'decision.inspect status');
        const again = await person.callTool({ name: 'action.approve', arguments: { decision_id: seed.decision_id } });
        const body = expectToolError(again, 'not_pending', 'action.approve(after delivery)');
        expect(body.message.includes('delivered'), `message should say delivered: ${show(body.message)}`);
    });

    // ---- 3. reject

    const toReject = await s.check('a new action to Sarah is pending_approval', () =>
        communicate(client, { to: SARAH, message: 'Can we move the budget review to Thursday?', tone: 'direct' }, 'pending_approval')
    );

    await s.check("action.reject on it with the person's token: success; status rejected; it leaves the inbox; the ledger names the person's token", async () => {
        expect(toReject, 'needs the pending action');
        const body = await callOk(person, 'action.reject', { decision_id: toReject.decision_id, reason: 'Not now' });
        expectEqual(body.status, 'success', `status (message: ${show(body.message)})`);
        expectEqual(body.decision_id, toReject.decision_id, 'decision_id');
        expectEqual(await decisionStatus(client, toReject.decision_id), 'rejected', 'decision status');
        const pending = await listDecisions(client, { status: 'pending' });
        expect(!pending.some(d => d.decision_id === toReject.decision_id), 'rejected decision still in the approval inbox');
        const ledger = await ledgerOf(dirA, toReject.decision_id);
        expectEqual(ledger.map(e => [e.event, e.detail]).slice(1), [['rejected', { reason: 'Not now', by: { channel: 'mcp', token_id: personA.id } }]], 'ledger after the proposal');
    });

    await s.check('the rejected action is not delivered (no JSONL line after 1.5 s, status stays rejected)', async () => {
        expect(toReject, 'needs the rejected action');
        await sleep(1_500);
        const lines = (await readJsonl(jsonlPath)).filter(m => m.action_id === toReject.action_id);
        expectEqual(lines, [], `JSONL lines for ${toReject.action_id}`);
        expectEqual(await decisionStatus(client, toReject.decision_id), 'rejected', 'decision status');
    });

    await s.check('rejecting it again: isError not_pending', async () => {
        expect(toReject, 'needs the rejected action');
        const result = await person.callTool({ name: 'action.reject', arguments: { decision_id: toReject.decision_id } });
        const body = expectToolError(result, 'not_pending', 'action.reject(again)');
        expect(body.message.includes('rejected'), `message should say rejected: ${show(body.message)}`);
    });

    // ---- 4. trust, set with the CLI while the server runs

    await s.check('trust level 0 for Sarah (CLI): action.communicate is trust_insufficient; the refusal is inspectable', async () => {
        await trustSet(dirA, SARAH, 0);
        const result = await client.callTool({ name: 'action.communicate', arguments: { to: SARAH, message: 'Are you free for lunch?' } });
        const body = expectToolError(result, 'trust_insufficient', 'action.communicate(level 0)');
        expectId(body.decision_id, 'dec_', 'decision_id');
        const inspected = await callOk(client, 'decision.inspect', { decision_id: body.decision_id });
        expectEqual(inspected.decision_id, body.decision_id, 'decision.inspect decision_id');
        expectEqual(inspected.decision_class, 'action_proposed', 'decision.inspect decision_class');
        expectId(inspected.ledger_entry_id, 'led_', 'decision.inspect ledger_entry_id');
        expectEqual(await decisionStatus(client, body.decision_id), 'refused', 'decision status');
        if (body.action_id) {
            await sleep(500);
            const lines = (await readJsonl(jsonlPath)).filter(m => m.action_id === body.action_id);
            expectEqual(lines, [], 'JSONL lines for the refused action');
        }
    });

    await s.check('trust level 3 for Sarah (CLI): action.communicate is success and delivered without approval', async () => {
        await trustSet(dirA, SARAH, 3);
        const t0 = Date.now();
        const body = await communicate(client, { to: SARAH, message: 'Sent the deck, see you Tuesday.', tone: 'warm' }, 'success');
        const lines = await waitFor(
            async () => {
                const l = (await readJsonl(jsonlPath)).filter(m => m.action_id === body.action_id);
                return l.length > 0 ? l : null;
            },
            5_000,
            `a JSONL line for ${body.action_id}`
        );
        s.info(`level 3: in the JSONL file ${Date.now() - t0} ms after action.communicate`);
        expectEqual(lines.length, 1, 'JSONL lines');
        expectEqual(lines[0].to, SARAH, 'to');
        expectEqual(lines[0].body, 'Hi Sarah,\n\nSent the deck, see you Tuesday.\n\nThanks so much!', 'body');
        await waitForStatus(client, body.decision_id, 'delivered', 5_000);
    });

    await s.check('default level 3 (CLI): Marcus (external, rule caps at 1) is still pending_approval', async () => {
        await trustSet(dirA, 'default', 3);
        const body = await communicate(client, { to: MARCUS, message: 'Project update: on track for Friday.' }, 'pending_approval');
        expectEqual(await decisionStatus(client, body.decision_id), 'pending', 'decision status');
        const why = await callOk(client, 'meta.why_this_action', { action_id: body.action_id });
        expectEqual(why.rule_summary, 'Never send to external counterparties without approval.', 'meta.why_this_action rule_summary');
        const fired = await listDecisions(client, { decision_class: 'rule_fired', counterparty: MARCUS });
        expect(fired.some(d => d.payload_summary.includes('external-needs-approval')), `no rule_fired decision for external-needs-approval: ${show(fired)}`);
    });

    await s.check('no transport errors on the outbox server sessions', () => {
        expectNoTransportErrors(transportErrors);
    });
    await s.check('sessions end cleanly', async () => {
        await closeClient(client);
        await closeClient(person);
    });
    await s.check('SIGTERM stops the outbox server with exit code 0', () => expectSigtermExit0(serverA));

    // ================================================================ B: webhook connector with retries
    const receiver = await s.check('webhook receiver listens (503 to the first 2 POSTs, then 200)', () => startWebhookReceiver(s, { failFirst: 2 }), {
        fatal: true
    });
    const dirB = await makeDataDir(s, 'v1actions-webhook');
    dataDirs.push(['webhook', dirB]);
    const configB = await writeConfig(files, 'webhook.toml', {
        connector: 'webhook',
        webhook_url: receiver.url,
        webhook_secret: WEBHOOK_SECRET,
        max_attempts: 8,
        timeout_seconds: 5
    });
    const tokenB = await s.check('webhook data dir: `cortex demo`, trust default 3, token create', async () => {
        await loadDemo(dirB);
        await trustSet(dirB, 'default', 3);
        return createToken(dirB, WORKSPACE, 'read,act');
    }, { fatal: true });
    const serverB = await s.check('serve --config (webhook connector) starts', () => startServer(s, dirB, { args: ['--config', configB] }), { fatal: true });
    const errorsB = [];
    const clientB = await s.check('v1 client connects to the webhook server', () => connect(serverB, tokenB, errorsB), { fatal: true });

    const hooked = await s.check('webhook: action.communicate to Sarah at level 3 is success', () =>
        communicate(clientB, { to: SARAH, message: 'Board pack is in your inbox.', tone: 'warm' }, 'success')
    );

    await s.check('webhook: after two 503s, exactly one accepted POST, signed, Idempotency-Key == action_id, body to/body', async () => {
        expect(hooked, 'needs the webhook action');
        const t0 = Date.now();
        await waitFor(() => receiver.posts.some(p => p.status === 200), 15_000, 'an accepted webhook POST');
        s.info(`webhook: accepted ${Date.now() - t0} ms after action.communicate, attempts at +${receiver.posts.map(p => p.at - t0).join(', +')} ms`);
        await sleep(1_500); // no redelivery after a 2xx
        const posts = receiver.posts;
        expectEqual(posts.map(p => p.status), [503, 503, 200], 'answers given, in order');
        for (const [i, p] of posts.entries()) {
            expectEqual(p.method, 'POST', `request ${i + 1} method`);
            expectEqual(p.url, '/hooks/cortex', `request ${i + 1} path`);
            expect(p.signatureOk, `request ${i + 1}: X-Cortex-Signature ${show(p.signature)} is not sha256=HMAC-SHA256(secret, raw body)`);
            expectEqual(p.idempotencyKey, hooked.action_id, `request ${i + 1} Idempotency-Key`);
            expect(/^application\/json/.test(p.contentType ?? ''), `request ${i + 1} content-type: ${show(p.contentType)}`);
        }
        expectEqual(new Set(posts.map(p => p.raw)).size, 1, 'distinct bodies across retries');
        const accepted = posts.filter(p => p.status === 200);
        expectEqual(accepted.length, 1, 'accepted deliveries');
        const body = accepted[0].body;
        expect(body && typeof body === 'object', `body is not JSON: ${show(accepted[0].raw)}`);
        expectEqual(body.action_id, hooked.action_id, 'body.action_id');
        expectEqual(body.to, SARAH, 'body.to');
        expectEqual(body.body, 'Hi Sarah,\n\nBoard pack is in your inbox.\n\nThanks so much!', 'body.body');
    });

    await s.check('webhook: decision.list shows the action delivered', async () => {
        expect(hooked, 'needs the webhook action');
        await waitForStatus(clientB, hooked.decision_id, 'delivered', 5_000);
    });

    await s.check('no transport errors on the webhook server session; session ends', async () => {
        expectNoTransportErrors(errorsB);
        await closeClient(clientB);
    });
    await s.check('SIGTERM stops the webhook server with exit code 0', () => expectSigtermExit0(serverB));

    // ================================================================ C: killed between commit and delivery
    const dirC = await makeDataDir(s, 'v1actions-crash');
    dataDirs.push(['crash', dirC]);
    const downPort = await freePort(); // nothing listens here until the receiver starts below
    const configC = await writeConfig(files, 'crash.toml', {
        connector: 'webhook',
        webhook_url: `http://127.0.0.1:${downPort}/hooks/cortex`,
        webhook_secret: WEBHOOK_SECRET,
        timeout_seconds: 5
    });
    const tokenC = await s.check('crash data dir: `cortex demo`, trust default 3, token create', async () => {
        await loadDemo(dirC);
        await trustSet(dirC, 'default', 3);
        return createToken(dirC, WORKSPACE, 'read,act');
    }, { fatal: true });
    const serverC1 = await s.check('serve --config (webhook to a port nobody listens on) starts', () => startServer(s, dirC, { args: ['--config', configC] }), {
        fatal: true
    });
    const errorsC = [];
    const clientC1 = await s.check('v1 client connects to it', () => connect(serverC1, tokenC, errorsC), { fatal: true });

    const crashed = await s.check('receiver down: action.communicate to Sarah at level 3 is success (committed)', () =>
        communicate(clientC1, { to: SARAH, message: 'Confirming the offsite venue.', tone: 'warm' }, 'success')
    );

    await s.check('SIGKILL the server before the message could be delivered', async () => {
        expect(crashed, 'needs the committed action');
        // Prefer killing just after a failed attempt was recorded (not while a row is leased).
        await waitFor(() => serverC1.output().includes(`delivery of ${crashed.action_id} failed`), 3_000, 'a logged failed attempt').catch(() =>
            s.info('no "delivery ... failed" log line seen within 3 s; killing anyway')
        );
        serverC1.stopped = true;
        serverC1.child.kill('SIGKILL');
        const { signal } = await serverC1.exited;
        expectEqual(signal, 'SIGKILL', 'exit signal');
        await clientC1.close().catch(() => {});
    });

    const receiverC = await s.check(`receiver starts on the webhook port ${downPort} (always 200)`, () => startWebhookReceiver(s, { port: downPort }), { fatal: true });

    const serverC2 = await s.check('serve restarts on the same data dir', () => startServer(s, dirC, { args: ['--config', configC] }), { fatal: true });

    await s.check('after restart the receiver gets the message exactly once within 10 s', async () => {
        expect(crashed, 'needs the committed action');
        const t0 = Date.now();
        await waitFor(() => receiverC.posts.length > 0, 10_000, 'the webhook POST after restart');
        s.info(`crash: delivered ${Date.now() - t0} ms after the restart was ready`);
        await sleep(1_500);
        expectEqual(receiverC.posts.length, 1, 'POSTs received');
        const p = receiverC.posts[0];
        expect(p.signatureOk, `X-Cortex-Signature ${show(p.signature)} is not sha256=HMAC-SHA256(secret, raw body)`);
        expectEqual(p.idempotencyKey, crashed.action_id, 'Idempotency-Key');
        expectEqual(p.body?.to, SARAH, 'body.to');
        expectEqual(p.body?.body, 'Hi Sarah,\n\nConfirming the offsite venue.\n\nThanks so much!', 'body.body');
    });

    await s.check('after restart: decision.list shows the action delivered', async () => {
        expect(crashed, 'needs the committed action');
        const c = await connect(serverC2, tokenC, errorsC);
        try {
            await waitForStatus(c, crashed.decision_id, 'delivered', 5_000);
        } finally {
            await closeClient(c);
        }
    });

    await s.check('SIGTERM stops the restarted server with exit code 0', () => expectSigtermExit0(serverC2));

    await s.check('`cortex ledger verify` on the crashed-and-restarted data dir exits 0', () => cortexOk('ledger', 'verify', '--data', dirC));

    // ================================================================ D: SMTP connector
    const smtp = await s.check('SMTP server (smtp-server, no TLS, auth optional) listens', () => startSmtpReceiver(s), { fatal: true });
    const dirD = await makeDataDir(s, 'v1actions-smtp');
    dataDirs.push(['smtp', dirD]);
    const configD = await writeConfig(files, 'smtp.toml', {
        connector: 'smtp',
        smtp_url: `smtp://127.0.0.1:${smtp.port}`,
        smtp_from: SMTP_FROM,
        smtp_tls: 'none', // this receiver has no STARTTLS (tests/e2e/test_smtp.py covers TLS)
        timeout_seconds: 5
    });
    const tokenD = await s.check('smtp data dir: `cortex demo`, trust Sarah 3, token create', async () => {
        await loadDemo(dirD);
        await trustSet(dirD, SARAH, 3);
        return createToken(dirD, WORKSPACE, 'read,act');
    }, { fatal: true });
    const serverD = await s.check('serve --config (smtp connector) starts', () => startServer(s, dirD, { args: ['--config', configD] }), { fatal: true });
    const errorsD = [];
    const clientD = await s.check('v1 client connects to the smtp server', () => connect(serverD, tokenD, errorsD), { fatal: true });

    const mailed = await s.check('smtp: action.communicate to Sarah at level 3 is success', () =>
        communicate(clientD, { ...SEED }, 'success')
    );

    await s.check('smtp: one message to Sarah from smtp_from, Message-ID <act_...@cortex>, with the draft text', async () => {
        expect(mailed, 'needs the smtp action');
        const t0 = Date.now();
        await waitFor(() => smtp.messages.length > 0, 10_000, 'a message at the SMTP server');
        s.info(`smtp: received ${Date.now() - t0} ms after action.communicate`);
        await sleep(1_000);
        expectEqual(smtp.messages.length, 1, 'messages received');
        const m = smtp.messages[0];
        expectEqual(m.rcptTo, [SARAH], 'envelope RCPT TO');
        expectEqual(m.mailFrom, SMTP_FROM, 'envelope MAIL FROM');
        const { headers, body } = parseMail(m.raw);
        expectEqual(headers.get('message-id'), `<${mailed.action_id}@cortex>`, 'Message-ID header');
        expectEqual(headers.get('to'), SARAH, 'To header');
        expect((headers.get('from') ?? '').includes(SMTP_FROM), `From header: ${show(headers.get('from'))}`);
        expect(body.includes(SEED_DRAFT), `body should hold the draft ${show(SEED_DRAFT)}, got ${show(body)}`);
    });

    await s.check('smtp: decision.list shows the action delivered', async () => {
        expect(mailed, 'needs the smtp action');
        await waitForStatus(clientD, mailed.decision_id, 'delivered', 5_000);
    });

    await s.check('no transport errors on the smtp server session; session ends', async () => {
        expectNoTransportErrors(errorsD);
        await closeClient(clientD);
    });
    await s.check('SIGTERM stops the smtp server with exit code 0', () => expectSigtermExit0(serverD));

    // ================================================================ E: earned trust ([trust] approvals_to_raise = 2)
    const dirE = await makeDataDir(s, 'v1actions-trust');
    dataDirs.push(['trust', dirE]);
    const jsonlE = join(files, 'trust.jsonl');
    const configE = await writeToml(files, 'trust.toml', { trust: { approvals_to_raise: 2 }, delivery: { connector: 'outbox', jsonl_path: jsonlE } });
    const [tokenE, personE] = await s.check("earned-trust data dir: `cortex demo`, the agent's and a person's token (Sarah at the default level 1)", async () => {
        await loadDemo(dirE);
        return [await createToken(dirE, WORKSPACE, 'read,act'), await createPersonToken(dirE)];
    }, { fatal: true });
    const serverE = await s.check('serve --config ([trust] approvals_to_raise = 2, outbox jsonl_path) starts', () => startServer(s, dirE, { args: ['--config', configE] }), {
        fatal: true
    });
    const errorsE = [];
    const clientE = await s.check('v1 client connects to the earned-trust server (the agent)', () => connect(serverE, tokenE, errorsE), { fatal: true });
    const personClientE = await s.check("a v1 client connects to it with the person's token", () => connect(serverE, personE.token, errorsE), { fatal: true });

    const trustTransitions = () => listDecisions(clientE, { decision_class: 'trust_transition' });
    /** A level-1 draft to Sarah by the agent, approved without edits by the person. */
    async function draftAndApprove(message, what) {
        const body = await communicate(clientE, { to: SARAH, message }, 'pending_approval', `${what}: action.communicate`);
        expect(/\bdraft\b/.test(body.message) && body.message.includes('trust level 1'), `${what}: message should say trust level 1, draft: ${show(body.message)}`);
        const approved = await callOk(personClientE, 'action.approve', { decision_id: body.decision_id }, `${what}: action.approve`);
        expectEqual(approved.status, 'success', `${what}: action.approve status (message: ${show(approved.message)})`);
        expectEqual(approved.decision_id, body.decision_id, `${what}: action.approve decision_id`);
        return body;
    }

    await s.check("earned trust: the agent's own approvals count for nothing (unauthorized; no trust_transition)", async () => {
        const body = await communicate(clientE, { to: SARAH, message: 'Approving my own draft?' }, 'pending_approval', 'action.communicate');
        for (let i = 0; i < 3; i++) await expectAgentRefused(clientE, 'action.approve', { decision_id: body.decision_id });
        await expectAgentRefused(clientE, 'action.reject', { decision_id: body.decision_id });
        expectEqual(await trustTransitions(), [], 'decision.list {decision_class: trust_transition}');
        expectEqual(await decisionStatus(clientE, body.decision_id), 'pending', 'decision status');
    });

    await s.check('earned trust: 1st message to Sarah is pending_approval (level 1, draft), approved without edits; no trust_transition yet', async () => {
        await draftAndApprove('Agenda for Thursday attached.', '1st');
        expectEqual(await trustTransitions(), [], 'decision.list {decision_class: trust_transition} after one approval');
    });

    let raisedId;
    await s.check('earned trust: 2nd approval without edits → one trust_transition "from 1 (draft) to 2 (supervised)"', async () => {
        await draftAndApprove('Notes from the call are in the shared folder.', '2nd');
        const rows = await trustTransitions();
        expectEqual(rows.length, 1, `trust_transition decisions (${show(rows.map(d => d.payload_summary))})`);
        const [raised] = rows;
        expectEqual(raised.decision_class, 'trust_transition', 'decision_class');
        expect(raised.payload_summary.includes('from 1 (draft) to 2 (supervised)'), `payload_summary: ${show(raised.payload_summary)}`);
        expect(/^Raise\b/.test(raised.payload_summary), `payload_summary should say Raise: ${show(raised.payload_summary)}`);
        raisedId = raised.decision_id;
    });

    const supervised = await s.check('earned trust: the next action.communicate to Sarah is pending_approval at level 2 (undo window, "supervised")', async () => {
        const body = await communicate(clientE, { to: SARAH, message: 'Can you review the Q3 numbers by Friday?' }, 'pending_approval', 'action.communicate(level 2)');
        expect(body.message.includes('supervised') && body.message.includes('trust level 2'), `message should say trust level 2, supervised: ${show(body.message)}`);
        expect(/unless rejected/.test(body.message), `message should mention the undo window ("unless rejected"): ${show(body.message)}`);
        expectEqual(await decisionStatus(clientE, body.decision_id), 'pending', 'decision status');
        return body;
    });

    await s.check("earned trust: the person's action.reject on it → a 2nd trust_transition lowers Sarah from 2 (supervised) to 1 (draft)", async () => {
        expect(supervised, 'needs the level-2 action');
        const body = await callOk(personClientE, 'action.reject', { decision_id: supervised.decision_id, reason: 'Not yet' });
        expectEqual(body.status, 'success', `action.reject status (message: ${show(body.message)})`);
        expectEqual(await decisionStatus(clientE, supervised.decision_id), 'rejected', 'decision status');
        const rows = await trustTransitions();
        expectEqual(rows.length, 2, `trust_transition decisions (${show(rows.map(d => d.payload_summary))})`);
        const lowered = rows.find(d => d.decision_id !== raisedId);
        expect(lowered, `no new trust_transition decision besides ${raisedId}: ${show(rows)}`);
        expect(lowered.payload_summary.includes('from 2 (supervised) to 1 (draft)'), `payload_summary: ${show(lowered.payload_summary)}`);
        expect(/^Lower\b/.test(lowered.payload_summary), `payload_summary should say Lower: ${show(lowered.payload_summary)}`);
    });

    const atOne = await s.check('earned trust: after the rejection the next send to Sarah is level 1 again ("draft" in the message)', async () => {
        const body = await communicate(clientE, { to: SARAH, message: 'Lunch next week?' }, 'pending_approval', 'action.communicate(after rejection)');
        expect(/\bdraft\b/.test(body.message) && body.message.includes('trust level 1'), `message should say trust level 1, draft: ${show(body.message)}`);
        expect(!body.message.includes('supervised'), `message should not say supervised: ${show(body.message)}`);
        return body;
    });

    await s.check('earned trust: rejections at level 1 never turn Sarah off (no 3rd trust_transition; the next send is still a level-1 draft)', async () => {
        expect(atOne, 'needs the level-1 action');
        const body = await callOk(personClientE, 'action.reject', { decision_id: atOne.decision_id, reason: 'No' });
        expectEqual(body.message, 'Rejected: nothing will be sent.', 'action.reject message');
        const again = await communicate(clientE, { to: SARAH, message: 'Coffee then?' }, 'pending_approval', 'action.communicate(after a rejection at level 1)');
        expect(again.message.includes('trust level 1'), `message should say trust level 1: ${show(again.message)}`);
        await callOk(personClientE, 'action.reject', { decision_id: again.decision_id }, 'action.reject(again at level 1)');
        expectEqual((await trustTransitions()).length, 2, 'trust_transition decisions');
        await communicate(clientE, { to: SARAH, message: 'Tea?' }, 'pending_approval', 'action.communicate(after two rejections at level 1)');
    });

    await s.check('no transport errors on the earned-trust server sessions; sessions end', async () => {
        expectNoTransportErrors(errorsE);
        await closeClient(clientE);
        await closeClient(personClientE);
    });
    await s.check('SIGTERM stops the earned-trust server with exit code 0', () => expectSigtermExit0(serverE));

    // ================================================================ F: concurrent approvals
    const dirF = await makeDataDir(s, 'v1actions-race');
    dataDirs.push(['race', dirF]);
    const jsonlF = join(files, 'race.jsonl');
    const configF = await writeConfig(files, 'race.toml', { connector: 'outbox', jsonl_path: jsonlF });
    const [tokenF, personF] = await s.check("race data dir: `cortex demo`, trust Sarah 1 (CLI), the agent's and a person's token", async () => {
        await loadDemo(dirF);
        await trustSet(dirF, SARAH, 1);
        return [await createToken(dirF, WORKSPACE, 'read,act'), await createPersonToken(dirF)];
    }, { fatal: true });
    const serverF = await s.check('serve --config (outbox, jsonl_path) starts on the race data dir', () => startServer(s, dirF, { args: ['--config', configF] }), {
        fatal: true
    });
    const errorsF = [];
    const clientF = await s.check('v1 client connects to the race server', () => connect(serverF, tokenF, errorsF), { fatal: true });

    const racing = await s.check('race: action.communicate to Sarah at level 1 is pending_approval', () =>
        communicate(clientF, { to: SARAH, message: 'Signed contract attached.', tone: 'warm' }, 'pending_approval')
    );

    await s.check("race: 5 concurrent action.approve with the person's token (own client and connection each): exactly one success, four isError not_pending", async () => {
        expect(racing, 'needs the pending action');
        // Each racer gets its own error list, checked before close() (which aborts its GET stream).
        const racerErrors = [];
        const racers = await Promise.all(Array.from({ length: 5 }, () => connect(serverF, personF.token, racerErrors)));
        try {
            const results = await Promise.all(racers.map(c => c.callTool({ name: 'action.approve', arguments: { decision_id: racing.decision_id } })));
            const ok = results.filter(r => r?.isError !== true);
            const failed = results.filter(r => r?.isError === true);
            expectEqual(ok.length, 1, `successful approvals (results: ${show(results.map(r => r?.structuredContent))})`);
            const body = expectTextMirrorsStructured(ok[0], 'the winning action.approve');
            expectEqual(body.status, 'success', `winner status (message: ${show(body.message)})`);
            expectEqual(body.decision_id, racing.decision_id, 'winner decision_id');
            expectEqual(body.action_id, racing.action_id, 'winner action_id');
            expectEqual(failed.length, 4, 'failed approvals');
            for (const [i, r] of failed.entries()) expectToolError(r, 'not_pending', `losing action.approve ${i + 1}`);
            const approvals = (await ledgerOf(dirF, racing.decision_id)).filter(e => e.event === 'approved');
            expectEqual(approvals.map(e => e.detail.by), [{ channel: 'mcp', token_id: personF.id }], 'approved ledger entries');
            expect(racerErrors.length === 0, `client.onerror on the racing connections saw: ${racerErrors.map(describeError).join(' | ')}`);
        } finally {
            for (const c of racers) await closeClient(c).catch(() => {});
        }
    });

    await s.check('race: the outbox JSONL receives the message exactly once; the decision is delivered', async () => {
        expect(racing, 'needs the approved action');
        const mine = async () => (await readJsonl(jsonlF)).filter(m => m.action_id === racing.action_id);
        await waitFor(async () => (await mine()).length > 0, 5_000, `a line for ${racing.action_id} in ${jsonlF}`);
        await sleep(1_000); // a second delivery would show up by now
        const all = await readJsonl(jsonlF);
        expectEqual(all.length, 1, `lines in ${jsonlF}`);
        expectEqual(all[0].action_id, racing.action_id, 'action_id');
        expectEqual(all[0].to, SARAH, 'to');
        expectEqual(all[0].body, 'Hi Sarah,\n\nSigned contract attached.\n\nThanks so much!', 'body');
        await waitForStatus(clientF, racing.decision_id, 'delivered', 5_000);
    });

    await s.check('no transport errors on the race server session; session ends', async () => {
        expectNoTransportErrors(errorsF);
        await closeClient(clientF);
    });
    await s.check('SIGTERM stops the race server with exit code 0', () => expectSigtermExit0(serverF));

    // ================================================================ G: the model drafter and its daily budget
    const model = await s.check('fake model (POST /v1/chat/completions answers "MODEL: <first line>") listens', () => startModelServer(s), { fatal: true });
    const dirG = await makeDataDir(s, 'v1actions-model');
    dataDirs.push(['model', dirG]);
    const jsonlG = join(files, 'model.jsonl');
    const configG = await writeToml(files, 'model.toml', {
        drafter: { kind: 'openai', url: model.url, model: 'm', timeout_seconds: 10 },
        quotas: { inference_units_per_day: 1 },
        delivery: { connector: 'outbox', jsonl_path: jsonlG }
    });
    const tokenG = await s.check('model data dir: `cortex demo`, trust Sarah 3 (CLI), token create', async () => {
        await loadDemo(dirG);
        await trustSet(dirG, SARAH, 3);
        return createToken(dirG, WORKSPACE, 'read,act');
    }, { fatal: true });
    const serverG = await s.check('serve --config ([drafter] kind openai, model m; [quotas] inference_units_per_day 1) starts', () => startServer(s, dirG, { args: ['--config', configG] }), {
        fatal: true
    });
    const errorsG = [];
    const clientG = await s.check('v1 client connects to the model-drafter server', () => connect(serverG, tokenG, errorsG), { fatal: true });

    const drafted = await s.check('model drafter: action.communicate to Sarah at level 3 is success; the JSONL gets body "MODEL: ..."', async () => {
        const body = await communicate(clientG, { to: SARAH, message: 'Budget approved for the offsite.\nDetails to follow.', tone: 'warm', context: 'Finance sign-off' }, 'success');
        const lines = await waitFor(
            async () => {
                const l = (await readJsonl(jsonlG)).filter(m => m.action_id === body.action_id);
                return l.length > 0 ? l : null;
            },
            5_000,
            `a JSONL line for ${body.action_id}`
        );
        expectEqual(lines.length, 1, 'JSONL lines');
        expectEqual(lines[0].to, SARAH, 'to');
        expectEqual(lines[0].body, 'MODEL: Budget approved for the offsite.', 'body');
        return body;
    });

    await s.check('model drafter: the fake model got one POST with model "m" and the message as the last user turn', () => {
        expect(drafted, 'needs the drafted action');
        expectEqual(model.requests.length, 1, `requests to the fake model (${show(model.requests.map(r => `${r.method} ${r.url}`))})`);
        const [r] = model.requests;
        expectEqual(`${r.method} ${r.url}`, 'POST /v1/chat/completions', 'request line');
        expectEqual(r.body?.model, 'm', 'request body.model');
        const users = (r.body?.messages ?? []).filter(m => m?.role === 'user');
        expect(users.length > 0 && String(users.at(-1).content).startsWith('Budget approved for the offsite.'), `last user message: ${show(r.body?.messages)}`);
    });

    await s.check('model drafter: budget spent → 2nd action.communicate isError quota_exceeded, quota inference_units_per_day, retry_after_s > 0', async () => {
        const result = await clientG.callTool({ name: 'action.communicate', arguments: { to: SARAH, message: 'One more thing.', tone: 'warm' } });
        const body = expectToolError(result, 'quota_exceeded', 'action.communicate(over budget)');
        expectEqual(body.quota, 'inference_units_per_day', 'quota');
        expect(Number.isInteger(body.retry_after_s) && body.retry_after_s > 0 && body.retry_after_s <= 86_400, `retry_after_s must be an integer in (0, 86400], got ${show(body.retry_after_s)}`);
    });

    await s.check('model drafter: the fake model was not called a second time; nothing more in the JSONL', async () => {
        await sleep(1_000);
        expectEqual(model.requests.length, 1, 'requests to the fake model');
        const lines = await readJsonl(jsonlG);
        expectEqual(lines.map(l => l.action_id), drafted ? [drafted.action_id] : [], 'JSONL action_ids');
    });

    await s.check('no transport errors on the model-drafter server session; session ends', async () => {
        expectNoTransportErrors(errorsG);
        await closeClient(clientG);
    });
    await s.check('SIGTERM stops the model-drafter server with exit code 0', () => expectSigtermExit0(serverG));

    // ================================================================ 8. ledgers
    await s.check('`cortex ledger verify` exits 0 on every data dir (outbox, webhook, crash, smtp, trust, race, model)', async () => {
        expectEqual(dataDirs.map(([name]) => name), ['outbox', 'webhook', 'crash', 'smtp', 'trust', 'race', 'model'], 'data dirs');
        for (const [name, dir] of dataDirs) {
            const r = await cortex('ledger', 'verify', '--data', dir);
            expect(r.code === 0, `${name}: ledger verify exited ${show(r.code)}; stdout: ${r.stdout.trim()} stderr: ${r.stderr.trim()}`);
        }
    });

    s.info(`total ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
