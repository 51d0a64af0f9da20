// Official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) client against
// `cortex serve` over Streamable HTTP: the triage read tools on the demo
// workspace (`cortex demo`), as the README tour walks them —
// notification.list, meta.why_this_notification, decision.inspect,
// decision.list — plus their tool errors and workspace isolation.
//
//   CORTEX_BIN=/path/to/cortex node v1_triage.mjs

import { execFile } from 'node:child_process';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
    Suite,
    createToken,
    expect,
    expectEqual,
    expectNoTransportErrors,
    expectSigtermExit0,
    expectTextMirrorsStructured,
    expectToolError,
    makeDataDir,
    requireCortexBin,
    show,
    startServer
} from './lib.mjs';

const WORKSPACE = 'demo';
const OTHER_WORKSPACE = 'other';
const READ_TOOLS = ['meta.why_this_notification', 'decision.inspect', 'decision.list', 'notification.list'];
const WHY_KEYS = ['notification_id', 'triage_class', 'rule_summary', 'confidence', 'contributing_signals', 'agent_version', 'world_version'];
// Well-formed (matches ^ntf_[0-7][0-9A-HJKMNP-TV-Z]{25}$) but never minted.
const UNKNOWN_NTF = 'ntf_7ZZZZZZZZZZZZZZZZZZZZZZZZZ';
const suite = new Suite('v1_triage', 26);

function newClient() {
    return new Client({ name: 'cortex-interop-v1-triage', version: '1.0.0' }, { capabilities: {} });
}

function newTransport(url, token) {
    return new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } }
    });
}

/**
 * `cortex demo --data DIR --today 2026-11-27`: loads the demo workspace where its files put
 * it (the tour below asks about fixed days; without --today the demo moves to the present
 * week, and from 4 Dec 2026 on its Tuesday is no longer 24 Nov).
 */
function loadDemo(dataDir) {
    const bin = requireCortexBin();
    const args = ['demo', '--data', dataDir, '--today', '2026-11-27'];
    return new Promise((resolve, reject) => {
        execFile(bin, args, { timeout: 60_000, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
            if (error) {
                reject(new Error(`\`cortex ${args.join(' ')}\` exited ${show(error.code ?? 1)}; stderr: ${String(stderr).trim() || '(empty)'}`));
            } else {
                resolve(String(stdout));
            }
        });
    });
}

/** Calls a tool that must succeed; returns the (text-mirrored) structuredContent. */
async function callOk(client, name, args, what = name) {
    const result = await client.callTool({ name, arguments: args });
    expect(result?.isError !== true, `${what}: unexpected isError: ${show(result?.structuredContent ?? result)}`);
    return expectTextMirrorsStructured(result, what);
}

function sorted(list) {
    return [...list].sort();
}

/** Follows next_cursor from the first page to the end; returns every decision in order. */
async function pageAll(client, filters, limit) {
    const all = [];
    const seenCursors = new Set();
    let cursor;
    for (let page = 0; ; page++) {
        expect(page < 1000, `decision.list paging did not end after ${page} pages`);
        const args = { ...filters, limit, ...(cursor ? { cursor } : {}) };
        const body = await callOk(client, 'decision.list', args, `decision.list(${JSON.stringify(args)})`);
        expect(Array.isArray(body.decisions), `decisions is not an array: ${show(body)}`);
        expect(body.decisions.length <= limit, `page ${page} has ${body.decisions.length} decisions > limit ${limit}`);
        all.push(...body.decisions);
        if (body.next_cursor === undefined) break;
        expect(typeof body.next_cursor === 'string' && body.next_cursor.length > 0, `next_cursor: ${show(body.next_cursor)}`);
        expect(body.decisions.length === limit, `page ${page} has a next_cursor but only ${body.decisions.length} of ${limit} decisions`);
        expect(!seenCursors.has(body.next_cursor), `next_cursor repeats: ${body.next_cursor}`);
        seenCursors.add(body.next_cursor);
        cursor = body.next_cursor;
    }
    return all;
}

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'v1triage');

    await s.check('`cortex demo` loads the demo workspace', () => loadDemo(dataDir), { fatal: true });
    const token = await s.check(`token create for workspace ${WORKSPACE} (scope read)`, () => createToken(dataDir, WORKSPACE, 'read'), {
        fatal: true
    });
    const otherToken = await s.check(`token create for a second workspace ${OTHER_WORKSPACE}`, () => createToken(dataDir, OTHER_WORKSPACE, 'read'), {
        fatal: true
    });
    const server = await s.check('serve starts and GET /healthz answers 200', () => startServer(s, dataDir), { fatal: true });

    const transportErrors = [];
    const client = newClient();
    client.onerror = err => transportErrors.push(err);
    await s.check(`v1 client connects with the ${WORKSPACE} token`, () => client.connect(newTransport(server.mcpUrl, token), { timeout: 15_000 }), {
        fatal: true
    });
    const otherClient = newClient();
    otherClient.onerror = err => transportErrors.push(err);
    await s.check(`v1 client connects with the ${OTHER_WORKSPACE} token`, () => otherClient.connect(newTransport(server.mcpUrl, otherToken), { timeout: 15_000 }), {
        fatal: true
    });

    // ---- tools/list

    await s.check('tools/list has the four triage read tools, readOnlyHint true, with input and output schemas', async () => {
        const { tools } = await client.listTools();
        const byName = new Map(tools.map(t => [t.name, t]));
        for (const name of READ_TOOLS) {
            const tool = byName.get(name);
            expect(tool, `tool ${name} not listed (have: ${[...byName.keys()].join(', ')})`);
            expectEqual(tool.annotations?.readOnlyHint, true, `${name}.annotations.readOnlyHint`);
            expect(tool.inputSchema && tool.inputSchema.type === 'object', `${name}.inputSchema must be an object schema: ${show(tool.inputSchema)}`);
            expect(tool.outputSchema && tool.outputSchema.type === 'object', `${name}.outputSchema must be an object schema: ${show(tool.outputSchema)}`);
        }
        const why = byName.get('meta.why_this_notification');
        expect(
            Array.isArray(why.inputSchema.required) && why.inputSchema.required.includes('notification_id'),
            `meta.why_this_notification.inputSchema.required must include notification_id: ${show(why.inputSchema)}`
        );
        const inspect = byName.get('decision.inspect');
        expect(
            Array.isArray(inspect.inputSchema.required) && inspect.inputSchema.required.includes('decision_id'),
            `decision.inspect.inputSchema.required must include decision_id: ${show(inspect.inputSchema)}`
        );
    });

    // ---- the tour: Tuesday 24 Nov, 10:20, during deep work

    const sarahNtf = await s.check(
        'notification.list at Tue 10:20: Sarah\'s "December rollout" surfaces at the 11:00 transition; digest at 17:00',
        async () => {
            const body = await callOk(client, 'notification.list', { as_of: '2026-11-24T10:20:00Z' });
            expectEqual(body.as_of, '2026-11-24T10:20:00Z', 'as_of');
            const next = body.next_transition;
            expect(next && typeof next === 'object', `next_transition must be an object, got ${show(next)}`);
            expectEqual(next.at, '2026-11-24T11:00:00Z', 'next_transition.at');
            expect(Array.isArray(next.notifications), `next_transition.notifications: ${show(next.notifications)}`);
            const sarah = next.notifications.find(n => n?.counterparty?.name === 'Sarah Chen' && n.subject === 'December rollout');
            expect(sarah, `no notification from Sarah Chen with subject "December rollout" in next_transition: ${show(next.notifications)}`);
            expectEqual(sarah.triage_class, 'surface_at_transition', 'Sarah notification triage_class');
            expectEqual(sarah.surface_at, '2026-11-24T11:00:00Z', 'Sarah notification surface_at');
            expect(/^ntf_/.test(sarah.notification_id ?? ''), `notification_id: ${show(sarah.notification_id)}`);
            expect(/^dec_/.test(sarah.decision_id ?? ''), `decision_id: ${show(sarah.decision_id)}`);
            expect(/^ep_/.test(sarah.episode_id ?? ''), `episode_id: ${show(sarah.episode_id)}`);
            expect(body.digest && typeof body.digest === 'object', `digest must be an object: ${show(body.digest)}`);
            expectEqual(body.digest.at, '2026-11-24T17:00:00Z', 'digest.at');
            expect(Array.isArray(body.due), `due must be an array: ${show(body.due)}`);
            return sarah;
        }
    );

    await s.check('meta.why_this_notification on Sarah\'s: surface_at_transition, VIP-at-break rule, pretty_sure, vip + focus-block signals', async () => {
        expect(sarahNtf, 'needs Sarah\'s notification from the notification.list check');
        const result = await client.callTool({ name: 'meta.why_this_notification', arguments: { notification_id: sarahNtf.notification_id } });
        expect(result?.isError !== true, `unexpected isError: ${show(result?.structuredContent ?? result)}`);
        const body = expectTextMirrorsStructured(result, 'meta.why_this_notification');
        expectEqual(sorted(Object.keys(body)), sorted(WHY_KEYS), 'keys of the result');
        expectEqual(body.notification_id, sarahNtf.notification_id, 'notification_id');
        expectEqual(body.triage_class, 'surface_at_transition', 'triage_class');
        expectEqual(body.rule_summary, 'Surface emails from VIP counterparties at the next focus-block break.', 'rule_summary');
        expectEqual(body.confidence, 'pretty_sure', 'confidence');
        expect(Array.isArray(body.contributing_signals), `contributing_signals: ${show(body.contributing_signals)}`);
        const signal = kind => body.contributing_signals.find(x => x?.kind === kind);
        expect(signal('vip_counterparty'), `no vip_counterparty signal: ${show(body.contributing_signals)}`);
        expectEqual(signal('vip_counterparty').summary, 'Sender is in VIP watchlist.', 'vip_counterparty summary');
        expect(signal('active_focus_block'), `no active_focus_block signal: ${show(body.contributing_signals)}`);
        expectEqual(signal('active_focus_block').summary, "Calendar block 'deep work' active until 11:00.", 'active_focus_block summary');
        expect(/^av_/.test(body.agent_version), `agent_version: ${show(body.agent_version)}`);
        expect(/^wv_/.test(body.world_version), `world_version: ${show(body.world_version)}`);
    });

    await s.check('Marcus\'s Tue 14:02 message is interrupt_now under "Reply to Marcus quickly on Tuesdays", strong_pattern', async () => {
        const list = await callOk(client, 'notification.list', { as_of: '2026-11-24T14:03:00Z', since: '2026-11-24T14:01:00Z' });
        expect(Array.isArray(list.due), `due must be an array: ${show(list.due)}`);
        const marcus = list.due.find(n => n?.counterparty?.name === 'Marcus Webb' && n.occurred_at === '2026-11-24T14:02:00Z');
        expect(marcus, `no notification from Marcus Webb at 14:02 in due: ${show(list.due)}`);
        expectEqual(marcus.triage_class, 'interrupt_now', 'due item triage_class');
        const why = await callOk(client, 'meta.why_this_notification', { notification_id: marcus.notification_id });
        expectEqual(why.triage_class, 'interrupt_now', 'triage_class');
        expectEqual(why.rule_summary, 'Reply to Marcus quickly on Tuesdays — he expects same-day for project updates.', 'rule_summary');
        expectEqual(why.confidence, 'strong_pattern', 'confidence');
    });

    const sarahDecision = await s.check('decision.inspect on Sarah\'s decision: triage, rul_/trc_ ids, ep_ evidence, occurred_at, world_version', async () => {
        expect(sarahNtf, 'needs Sarah\'s notification from the notification.list check');
        const body = await callOk(client, 'decision.inspect', { decision_id: sarahNtf.decision_id });
        expectEqual(body.decision_id, sarahNtf.decision_id, 'decision_id');
        expectEqual(body.decision_class, 'triage', 'decision_class');
        const r = body.reasoning;
        expect(r && typeof r === 'object', `reasoning: ${show(r)}`);
        expect(typeof r.rule_id === 'string' && r.rule_id.startsWith('rul_'), `reasoning.rule_id must start with rul_: ${show(r.rule_id)}`);
        expect(typeof r.trace_id === 'string' && r.trace_id.startsWith('trc_'), `reasoning.trace_id must start with trc_: ${show(r.trace_id)}`);
        expect(Array.isArray(r.source_episode_ids) && r.source_episode_ids.length > 0, `reasoning.source_episode_ids must be non-empty: ${show(r.source_episode_ids)}`);
        for (const id of r.source_episode_ids) expect(typeof id === 'string' && id.startsWith('ep_'), `source episode id must start with ep_: ${show(id)}`);
        expect(typeof body.occurred_at === 'string' && !Number.isNaN(Date.parse(body.occurred_at)), `occurred_at: ${show(body.occurred_at)}`);
        expect(typeof body.world_version === 'string' && body.world_version.startsWith('wv_'), `world_version: ${show(body.world_version)}`);
        return body;
    });

    // ---- decision.list

    await s.check('decision.list pages with limit 5: no duplicates, ids strictly descending, same set as one limit-100 call', async () => {
        const paged = await pageAll(client, {}, 5);
        const one = await callOk(client, 'decision.list', { limit: 100 }, 'decision.list(limit 100)');
        expect(one.next_cursor === undefined, `limit 100 should hold every demo decision, got next_cursor ${show(one.next_cursor)}`);
        const ids = paged.map(d => d.decision_id);
        expect(ids.length > 5, `expected more than one page of decisions, got ${ids.length}`);
        expectEqual(new Set(ids).size, ids.length, 'distinct ids across pages');
        for (let i = 1; i < ids.length; i++) {
            expect(ids[i - 1] > ids[i], `ids not strictly descending at ${i}: ${ids[i - 1]} then ${ids[i]}`);
        }
        expectEqual(ids, one.decisions.map(d => d.decision_id), 'paged ids vs limit-100 ids');
        if (sarahDecision) expect(ids.includes(sarahDecision.decision_id), `Sarah's decision ${sarahDecision.decision_id} missing from decision.list`);
        s.info(`${ids.length} decisions in workspace ${WORKSPACE}`);
    });

    await s.check('decision.list counterparty "@sarahc" returns only decisions about Sarah', async () => {
        const body = await callOk(client, 'decision.list', { counterparty: '@sarahc', limit: 100 });
        expect(Array.isArray(body.decisions) && body.decisions.length > 0, `expected decisions about Sarah, got ${show(body.decisions)}`);
        for (const d of body.decisions) {
            expect(/Sarah/.test(d.payload_summary ?? ''), `payload_summary does not mention Sarah: ${show(d)}`);
        }
        if (sarahNtf?.counterparty?.entity_id) {
            for (const d of body.decisions) {
                expectEqual(d.counterparty_id, sarahNtf.counterparty.entity_id, `counterparty_id of ${d.decision_id}`);
            }
        }
        if (sarahNtf) {
            expect(body.decisions.some(d => d.decision_id === sarahNtf.decision_id), `Sarah's "December rollout" decision missing from the @sarahc filter`);
        }
    });

    // ---- tool errors

    await s.check('meta.why_this_notification with an ep_ id is invalid_arguments naming notification_id', async () => {
        const epId = sarahNtf?.episode_id ?? 'ep_01M8PVN9Q9646X6W39MV7HBK76';
        const result = await client.callTool({ name: 'meta.why_this_notification', arguments: { notification_id: epId } });
        const body = expectToolError(result, 'invalid_arguments', 'why(ep_ id)');
        expect(body.message.includes('notification_id'), `message should name notification_id: ${show(body.message)}`);
    });

    const unknownBody = await s.check('meta.why_this_notification with an unknown well-formed ntf_ id is not_found', async () => {
        const result = await client.callTool({ name: 'meta.why_this_notification', arguments: { notification_id: UNKNOWN_NTF } });
        return expectToolError(result, 'not_found', 'why(unknown ntf_)');
    });

    await s.check(`a ${WORKSPACE} notification asked with the ${OTHER_WORKSPACE} token is not_found, same answer as an unknown id`, async () => {
        expect(sarahNtf, 'needs Sarah\'s notification from the notification.list check');
        const result = await otherClient.callTool({ name: 'meta.why_this_notification', arguments: { notification_id: sarahNtf.notification_id } });
        const body = expectToolError(result, 'not_found', 'why(other workspace)');
        expect(!body.message.includes('Sarah') && !body.message.includes(WORKSPACE), `message leaks the other workspace: ${show(body.message)}`);
        if (unknownBody) {
            expectEqual(
                body.message.replaceAll(sarahNtf.notification_id, '<id>'),
                unknownBody.message.replaceAll(UNKNOWN_NTF, '<id>'),
                'message (id masked) vs the unknown-id message'
            );
        }
    });

    await s.check(`a ${WORKSPACE} decision asked with the ${OTHER_WORKSPACE} token is not_found`, async () => {
        expect(sarahNtf, 'needs Sarah\'s notification from the notification.list check');
        const result = await otherClient.callTool({ name: 'decision.inspect', arguments: { decision_id: sarahNtf.decision_id } });
        expectToolError(result, 'not_found', 'decision.inspect(other workspace)');
    });

    await s.check('decision.list with a garbage cursor is invalid_arguments', async () => {
        const result = await client.callTool({ name: 'decision.list', arguments: { cursor: 'garbage' } });
        const body = expectToolError(result, 'invalid_arguments', 'decision.list(garbage cursor)');
        expect(body.message.includes('cursor'), `message should name cursor: ${show(body.message)}`);
    });

    await s.check('decision.list cursor reused with different filters is invalid_arguments', async () => {
        const first = await callOk(client, 'decision.list', { limit: 5 }, 'decision.list(limit 5)');
        expect(typeof first.next_cursor === 'string', `first page has no next_cursor: ${show(first)}`);
        const result = await client.callTool({ name: 'decision.list', arguments: { limit: 5, decision_class: 'triage', cursor: first.next_cursor } });
        const body = expectToolError(result, 'invalid_arguments', 'decision.list(cursor, other filters)');
        expect(body.message.includes('cursor'), `message should name cursor: ${show(body.message)}`);
    });

    await s.check('decision.list with since after until is invalid_arguments', async () => {
        const result = await client.callTool({ name: 'decision.list', arguments: { since: '2026-11-25T00:00:00Z', until: '2026-11-24T00:00:00Z' } });
        expectToolError(result, 'invalid_arguments', 'decision.list(since > until)');
    });

    await s.check('limit 1000 is invalid_arguments (decision.list and notification.list)', async () => {
        const r1 = await client.callTool({ name: 'decision.list', arguments: { limit: 1000 } });
        expectToolError(r1, 'invalid_arguments', 'decision.list(limit 1000)');
        const r2 = await client.callTool({ name: 'notification.list', arguments: { as_of: '2026-11-24T10:20:00Z', limit: 1000 } });
        expectToolError(r2, 'invalid_arguments', 'notification.list(limit 1000)');
    });

    // ---- isolation

    await s.check(`the ${OTHER_WORKSPACE} workspace's decision.list is empty`, async () => {
        const body = await callOk(otherClient, 'decision.list', { limit: 100 }, 'decision.list(other)');
        expectEqual(body.decisions, [], 'decisions');
        expectEqual(body.next_cursor, undefined, 'next_cursor');
    });

    await s.check(`the ${OTHER_WORKSPACE} workspace's notification.list at Tue 10:20 is empty`, async () => {
        const body = await callOk(otherClient, 'notification.list', { as_of: '2026-11-24T10:20:00Z' }, 'notification.list(other)');
        expectEqual(body.due, [], 'due');
        expectEqual(body.next_transition, null, 'next_transition');
        expectEqual(body.digest?.notifications, [], 'digest.notifications');
    });

    // ---- teardown

    await s.check('no transport errors during the sessions', () => {
        expectNoTransportErrors(transportErrors);
    });

    await s.check('sessions end cleanly', async () => {
        for (const c of [client, otherClient]) {
            const t = c.transport;
            if (t?.sessionId) await t.terminateSession();
            await c.close();
        }
    });

    await s.check('SIGTERM stops the server with exit code 0', () => expectSigtermExit0(server));
});
