// Official MCP TypeScript SDK v2 (@modelcontextprotocol/client) against `cortex serve` in the
// 2026-07-28 era: `subscriptions/listen` on the demo workspace. A listening client is told
// within a second when an interrupt_now notification arrives (an urgent message from a VIP,
// ingested through POST /v1/episodes) and when a draft joins the inbox; another workspace's
// listener is told nothing; a bad filter is refused; close() ends the stream; a server that
// stops ends an open listen with its result (a graceful close). Then the same over stdio
// (`cortex mcp --stdio`), where the listen's messages share stdout with the answers.
//
//   CORTEX_BIN=/path/to/cortex node v2_listen.mjs

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { Suite, createToken, expect, expectEqual, expectSigtermExit0, makeDataDir, requireCortexBin, show, startServer } from './lib.mjs';
import { SARAH, WORKSPACE, draftForApproval, loadDemo } from './resources.mjs';

const MODERN = '2026-07-28';
const DUE = 'cortex://notifications/due';
const INBOX = 'cortex://inbox';
const suite = new Suite('v2_listen', 19);

function connect(server, token, name) {
    const client = new Client({ name, version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    const transport = new StreamableHTTPClientTransport(server.mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    return client.connect(transport, { timeout: 15_000 }).then(() => client);
}

/** Records every notifications/resources/updated a client receives, with its arrival time. */
function recordUpdates(client) {
    const updates = [];
    const waiters = [];
    client.setNotificationHandler('notifications/resources/updated', n => {
        const u = { uri: n.params.uri, meta: n.params._meta, at: Date.now() };
        updates.push(u);
        for (const w of waiters.splice(0)) w();
    });
    return {
        updates,
        /** Resolves with the first update of `uri` after index `from`, or rejects after `ms`. */
        async next(uri, from, ms) {
            const deadline = Date.now() + ms;
            for (;;) {
                const hit = updates.slice(from).find(u => u.uri === uri);
                if (hit) return hit;
                const left = deadline - Date.now();
                if (left <= 0) throw new Error(`no update of ${uri} within ${ms} ms; got ${show(updates.slice(from))}`);
                await new Promise(resolve => {
                    waiters.push(resolve);
                    setTimeout(resolve, left).unref();
                });
            }
        }
    };
}

async function ingest(server, token, lines) {
    const res = await fetch(`${server.baseUrl}/v1/episodes`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/x-ndjson' },
        body: lines.map(l => JSON.stringify(l)).join('\n')
    });
    const body = await res.json();
    expectEqual(res.status, 200, `ingest status (${show(body)})`);
    return body;
}

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'v2listen');
    await s.check('`cortex demo` loads the demo workspace', () => loadDemo(dataDir), { fatal: true });
    const token = await s.check('token create (read,act)', () => createToken(dataDir, WORKSPACE, 'read,act'), { fatal: true });
    const otherToken = await s.check('token create for a second workspace', () => createToken(dataDir, 'other', 'read,act'), { fatal: true });
    const server = await s.check('serve starts', () => startServer(s, dataDir), { fatal: true });
    const client = await s.check(`v2 client connects pinned to ${MODERN}; resources.subscribe advertised`, async () => {
        const c = await connect(server, token, 'cortex-interop-v2-listen');
        expectEqual(c.getServerCapabilities()?.resources?.subscribe, true, 'resources.subscribe');
        return c;
    }, { fatal: true });
    const updates = recordUpdates(client);
    const other = await s.check('a second workspace\'s client connects', () => connect(server, otherToken, 'cortex-interop-v2-listen-other'), { fatal: true });
    const otherUpdates = recordUpdates(other);

    const sub = await s.check('listen acknowledges the resources it will watch, and no list changes (Cortex\'s lists change only with a release)', async () => {
        const listening = await client.listen({ resourceSubscriptions: [DUE, INBOX], toolsListChanged: true, promptsListChanged: true });
        expectEqual(listening.honoredFilter, { resourceSubscriptions: [DUE, INBOX] }, 'honored filter');
        return listening;
    }, { fatal: true });
    const otherSub = await s.check('the other workspace listens to the same URIs', async () => {
        const listening = await other.listen({ resourceSubscriptions: [DUE, INBOX] });
        expectEqual(listening.honoredFilter, { resourceSubscriptions: [DUE, INBOX] }, 'honored filter');
        return listening;
    }, { fatal: true });

    await s.check('an urgent message from a VIP is ingested: interrupt_now, and the listener is told within a second', async () => {
        const from = updates.updates.length;
        const subject = `URGENT: the board needs the numbers now ${Date.now()}`;
        const report = await ingest(server, token, [{
            type: 'episode', kind: 'message_received', occurred_at: new Date().toISOString(),
            counterparty: SARAH, subject, summary: 'Sarah: urgent, the board needs the revised numbers asap',
            external_id: `listen-${Date.now()}`
        }]);
        const ackAt = Date.now();
        expectEqual(report.episodes_added, 1, 'episodes_added');
        const update = await updates.next(DUE, from, 1000);
        s.info(`cortex://notifications/due update arrived ${update.at - ackAt} ms after the ingest was acknowledged`);
        const id = update.meta?.['io.modelcontextprotocol/subscriptionId'];
        expect(id !== undefined && id !== null, `subscriptionId in _meta: ${show(update.meta)}`);
        const { contents } = await client.readResource({ uri: DUE });
        const due = JSON.parse(contents[0].text);
        const text = JSON.stringify(due);
        expect(text.includes(subject) || text.includes('board needs the revised numbers'), `the new message is due: ${text.slice(0, 600)}`);
        expect(text.includes('interrupt_now'), `due as interrupt_now: ${text.slice(0, 600)}`);
    });

    await s.check('a draft joins the inbox: the listener is told within a second', async () => {
        const from = updates.updates.length;
        await draftForApproval(client);
        const ackAt = Date.now();
        const update = await updates.next(INBOX, from, 1000);
        s.info(`cortex://inbox update arrived ${update.at - ackAt} ms after action.communicate was acknowledged`);
    });

    await s.check('the other workspace\'s listener was told nothing of it', async () => {
        await new Promise(r => setTimeout(r, 700)); // more than one look of its stream
        expectEqual(otherUpdates.updates, [], 'updates seen by the other workspace');
    });

    await s.check('listening to a URI no resource matches is refused with -32602 naming it', async () => {
        let err;
        try {
            await client.listen({ resourceSubscriptions: ['cortex://nope'] });
        } catch (e) {
            err = e;
        }
        expect(err !== undefined, 'listen succeeded');
        expect(err.code === -32602 || /-32602|Resource not found/.test(String(err.message)), `error: ${show(err?.code)} ${err?.message}`);
    });

    await s.check('close() ends the subscription locally; nothing more arrives on it', async () => {
        await sub.close();
        expectEqual(await sub.closed, 'local', 'closed');
        await otherSub.close();
        const from = updates.updates.length;
        await draftForApproval(client);
        await new Promise(r => setTimeout(r, 1200));
        expectEqual(updates.updates.slice(from), [], 'updates after close');
    });

    const last = await s.check('a listen open when the server stops is acknowledged', async () => {
        const listening = await client.listen({ resourceSubscriptions: [INBOX] });
        expectEqual(listening.honoredFilter, { resourceSubscriptions: [INBOX] }, 'honored filter');
        return listening;
    });
    await s.check('server stops (SIGTERM, exit 0); the open listen is ended gracefully, with its result', async () => {
        await expectSigtermExit0(server);
        const how = await Promise.race([last.closed, new Promise(r => setTimeout(() => r('still open after 2 s'), 2000))]);
        expectEqual(how, 'graceful', 'how the subscription closed');
    });
    await client.close().catch(() => {});
    await other.close().catch(() => {});

    // stdio: one process at a time on the data directory.
    const stdio = new Client({ name: 'cortex-interop-v2-listen-stdio', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    const transport = new StdioClientTransport({
        command: requireCortexBin(),
        args: ['mcp', '--stdio', '--data', dataDir],
        env: { CORTEX_TOKEN: token },
        stderr: 'pipe'
    });
    await s.check(`v2 stdio client connects pinned to ${MODERN}; resources.subscribe advertised`, async () => {
        await stdio.connect(transport, { timeout: 15_000 });
        expectEqual(stdio.getServerCapabilities()?.resources?.subscribe, true, 'resources.subscribe');
    }, { fatal: true });
    const stdioUpdates = recordUpdates(stdio);
    const stdioSub = await s.check('stdio: listen to the inbox is acknowledged', async () => {
        const listening = await stdio.listen({ resourceSubscriptions: [INBOX] });
        expectEqual(listening.honoredFilter, { resourceSubscriptions: [INBOX] }, 'honored filter');
        return listening;
    }, { fatal: true });
    await s.check('stdio: a draft made on the same channel is told within a second, tagged with the subscription', async () => {
        const from = stdioUpdates.updates.length;
        await draftForApproval(stdio);
        const ackAt = Date.now();
        const update = await stdioUpdates.next(INBOX, from, 1000);
        s.info(`stdio: cortex://inbox update arrived ${update.at - ackAt} ms after action.communicate was acknowledged`);
        expect(update.meta?.['io.modelcontextprotocol/subscriptionId'] !== undefined, `subscriptionId: ${show(update.meta)}`);
    });
    await s.check('stdio: after close() (notifications/cancelled) nothing more is told', async () => {
        await stdioSub.close();
        expectEqual(await stdioSub.closed, 'local', 'closed');
        const from = stdioUpdates.updates.length;
        await draftForApproval(stdio);
        await new Promise(r => setTimeout(r, 1200));
        expectEqual(stdioUpdates.updates.slice(from), [], 'updates after close');
    });
    await stdio.close().catch(() => {});
});
