// Official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) clients against the demo
// workspace, over Streamable HTTP (`cortex serve`) and stdio (`cortex mcp --stdio`), both
// 2025-11-25: resources (fixed and templates), prompts, completions and logging/setLevel,
// and another workspace seeing none of it.
//
//   CORTEX_BIN=/path/to/cortex node v1_resources.mjs

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Suite, createToken, expectSigtermExit0, expectEqual, makeDataDir, requireCortexBin, startServer } from './lib.mjs';
import { CHECKS_PER_CLIENT, WORKSPACE, checkResourcesAndPrompts, draftForApproval, loadDemo } from './resources.mjs';

const RESOURCE_NOT_FOUND = -32002; // the 2025-11-25 era's code
const suite = new Suite('v1_resources', 11 + 2 * CHECKS_PER_CLIENT);

function newClient() {
    return new Client({ name: 'cortex-interop-v1-resources', version: '1.0.0' }, { capabilities: {} });
}

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'v1resources');
    await s.check('`cortex demo` loads the demo workspace', () => loadDemo(dataDir), { fatal: true });
    const token = await s.check('token create (read,act) for the demo workspace', () => createToken(dataDir, WORKSPACE, 'read,act'), { fatal: true });
    const otherToken = await s.check('token create for a second workspace', () => createToken(dataDir, 'other', 'read'), { fatal: true });
    const server = await s.check('serve starts', () => startServer(s, dataDir), { fatal: true });
    const http = url => tok => new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${tok}` } } });

    const client = newClient();
    await s.check('v1 HTTP client connects', () => client.connect(http(server.mcpUrl)(token), { timeout: 15_000 }), { fatal: true });
    const decisionId = await s.check('action.communicate holds a draft for approval', () => draftForApproval(client), { fatal: true });
    await checkResourcesAndPrompts(s, client, 'v1 http', decisionId, RESOURCE_NOT_FOUND);

    await s.check('v1 http: logging/setLevel answers {}; a bad level is refused', async () => {
        expectEqual(await client.setLoggingLevel('warning'), {}, 'setLevel result');
        let err;
        try {
            await client.request({ method: 'logging/setLevel', params: { level: 'loud' } }, (await import('@modelcontextprotocol/sdk/types.js')).EmptyResultSchema);
        } catch (e) {
            err = e;
        }
        expectEqual(err?.code, -32602, `bad level error (${err?.message})`);
    });

    await s.check('another workspace reads its own empty inbox and not this decision', async () => {
        const other = newClient();
        try {
            await other.connect(http(server.mcpUrl)(otherToken), { timeout: 15_000 });
            const { contents } = await other.readResource({ uri: 'cortex://inbox' });
            expectEqual(JSON.parse(contents[0].text).pending, [], 'other inbox');
            let err;
            try {
                await other.readResource({ uri: `cortex://decisions/${decisionId}` });
            } catch (e) {
                err = e;
            }
            expectEqual(err?.code, RESOURCE_NOT_FOUND, `other workspace reading the decision (${err?.message})`);
            const { completion } = await other.complete({
                ref: { type: 'ref/prompt', name: 'why_did_you_do_that' },
                argument: { name: 'decision_id', value: 'dec_' }
            });
            expectEqual(completion.values, [], 'other workspace completions');
        } finally {
            await other.close().catch(() => {});
        }
    });
    await s.check('a client subscribed to cortex://inbox is told within a second when a draft joins it', async () => {
        const { ResourceUpdatedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
        const watcher = newClient();
        const updates = [];
        let told;
        const toldPromise = new Promise(resolve => (told = resolve));
        watcher.setNotificationHandler(ResourceUpdatedNotificationSchema, n => {
            updates.push({ uri: n.params.uri, at: Date.now() });
            if (n.params.uri === 'cortex://inbox') told();
        });
        try {
            await watcher.connect(http(server.mcpUrl)(token), { timeout: 15_000 });
            expectEqual(watcher.getServerCapabilities()?.resources?.subscribe, true, 'resources.subscribe capability');
            expectEqual(await watcher.subscribeResource({ uri: 'cortex://inbox' }), {}, 'subscribe result');
            await new Promise(r => setTimeout(r, 1200)); // the stream's first look
            const before = updates.length;
            const sentAt = Date.now();
            await draftForApproval(client);
            const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(`no update within 1.5 s; got ${JSON.stringify(updates)}`)), 1500));
            await Promise.race([toldPromise, timeout]);
            const update = updates.slice(before).find(u => u.uri === 'cortex://inbox');
            s.info(`inbox update arrived ${update.at - sentAt} ms after the draft was acknowledged`);
            expectEqual(await watcher.unsubscribeResource({ uri: 'cortex://inbox' }), {}, 'unsubscribe result');
        } finally {
            await watcher.close().catch(() => {});
        }
    });
    await client.close().catch(() => {});
    await s.check('server stops', () => expectSigtermExit0(server));

    // The same over stdio (one process at a time on the data directory).
    const stdio = newClient();
    const transport = new StdioClientTransport({
        command: requireCortexBin(),
        args: ['mcp', '--stdio', '--data', dataDir],
        env: { CORTEX_TOKEN: token },
        stderr: 'pipe'
    });
    await s.check('v1 stdio client connects', () => stdio.connect(transport, { timeout: 15_000 }), { fatal: true });
    await checkResourcesAndPrompts(s, stdio, 'v1 stdio', decisionId, RESOURCE_NOT_FOUND);
    await stdio.close().catch(() => {});
});
