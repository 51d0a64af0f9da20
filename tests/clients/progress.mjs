// Official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) client against `cortex serve`
// (Streamable HTTP, 2025-11-25): progress and cancellation of long calls (issue #31).
// callTool with onprogress receives episode.ingest's progress while it runs; aborting a call
// (AbortSignal) sends notifications/cancelled, and the server stops it: nothing of the
// batch is stored.
//
//   CORTEX_BIN=/path/to/cortex node progress.mjs

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

import { Suite, createToken, describeError, expect, expectEqual, makeDataDir, show, startServer, tapTransport } from './lib.mjs';

const WORKSPACE = 'sdk-progress';
const suite = new Suite('progress', 6);

function episodes(n, tag) {
    const t0 = Date.parse('2026-01-05T09:00:00Z');
    return Array.from({ length: n }, (_, i) => ({
        type: 'episode',
        kind: 'message_sent',
        occurred_at: new Date(t0 + i * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        counterparty: `p${i % 50}@${tag}.example`,
        summary: `note ${i}`,
        external_id: `${tag}-${i}`
    }));
}

async function episodeCount(client) {
    const r = await client.callTool({ name: 'workspace.status', arguments: {} });
    return r.structuredContent.episodes;
}

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'progress');
    const token = await s.check('token create', () => createToken(dataDir, WORKSPACE), { fatal: true });
    const server = await s.check('serve starts', () => startServer(s, dataDir), { fatal: true });
    const client = new Client({ name: 'cortex-progress', version: '1.0.0' }, { capabilities: {} });
    const transport = new StreamableHTTPClientTransport(server.mcpUrl, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } }
    });
    const tap = tapTransport(transport);
    await client.connect(transport, { timeout: 15_000 });
    s.onCleanup(() => client.close());

    await s.check('tools/list has episode.ingest and rule.learn', async () => {
        const { tools } = await client.listTools();
        const names = tools.map(t => t.name);
        expect(names.includes('episode.ingest') && names.includes('rule.learn'), show(names));
    });

    await s.check('callTool with onprogress receives growing progress before the result', async () => {
        const seen = [];
        const result = await client.callTool(
            { name: 'episode.ingest', arguments: { lines: episodes(4000, 'onprogress') } },
            CallToolResultSchema,
            { onprogress: p => seen.push(p), timeout: 60_000 }
        );
        expect(!result.isError, show(result));
        expectEqual(result.structuredContent.episodes_added, 4000, 'episodes_added');
        expect(seen.length >= 3, `progress notifications: ${show(seen)}`);
        for (let i = 1; i < seen.length; i++) {
            expect(seen[i].progress > seen[i - 1].progress, `progress must grow: ${show(seen)}`);
        }
        expectEqual(seen[seen.length - 1].progress, 4000, 'last progress');
        expectEqual(seen[0].total, 4000, 'total');
    });

    await s.check('rule.learn reports its three phases', async () => {
        const seen = [];
        const result = await client.callTool({ name: 'rule.learn', arguments: {} }, CallToolResultSchema, {
            onprogress: p => seen.push(p)
        });
        expect(!result.isError, show(result));
        expectEqual(seen.map(p => p.progress).join(','), '1,2,3', 'phases');
    });

    await s.check('aborting a call sends notifications/cancelled and nothing of the batch stays', async () => {
        const before = await episodeCount(client);
        const controller = new AbortController();
        let progressed = 0;
        const call = client.callTool(
            // Under the 1 MiB limit of a request without Mcp-Name (the v1 SDK sends none).
            { name: 'episode.ingest', arguments: { lines: episodes(5000, 'aborted') } },
            CallToolResultSchema,
            {
                signal: controller.signal,
                timeout: 60_000,
                onprogress: () => {
                    if (++progressed === 1) controller.abort('user gave up');
                }
            }
        );
        let err;
        try {
            await call;
        } catch (e) {
            err = e;
        }
        expect(err, 'the aborted call resolved');
        expect(progressed >= 1, `no progress before the abort: ${describeError(err)}`);
        const ingest = tap.sent.filter(m => m.method === 'tools/call' && m.params?.name === 'episode.ingest').pop();
        const cancel = tap.sent.find(m => m.method === 'notifications/cancelled');
        expect(cancel && cancel.params.requestId === ingest.id, `notifications/cancelled naming ${ingest.id}: ${show(cancel)}`);
        expect(!tap.received.some(m => m.id === ingest.id && ('result' in m || 'error' in m)), 'the cancelled call was answered');
        // The next call waits while the batch holds the workspace: it sees it undone.
        const after = await episodeCount(client);
        expectEqual(after, before, 'episodes after the aborted ingest');
        const deadline = Date.now() + 5000;
        while (!/tool=episode\.ingest status=cancelled/.test(server.output()) && Date.now() < deadline) {
            await new Promise(r => setTimeout(r, 50));
        }
        expect(/tool=episode\.ingest status=cancelled/.test(server.output()), 'the server stopped the call (status=cancelled in its log)');
    });
});
