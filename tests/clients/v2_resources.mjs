// Official MCP TypeScript SDK v2 (@modelcontextprotocol/client) against `cortex serve` in
// the 2026-07-28 era (server/discover, no session): resources, prompts and completions on
// the demo workspace, and the era's resource-not-found error (-32602).
//
//   CORTEX_BIN=/path/to/cortex node v2_resources.mjs

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { Suite, createToken, expectEqual, makeDataDir, startServer } from './lib.mjs';
import { CHECKS_PER_CLIENT, WORKSPACE, checkResourcesAndPrompts, draftForApproval, loadDemo } from './resources.mjs';

const MODERN = '2026-07-28';
const suite = new Suite('v2_resources', 7 + CHECKS_PER_CLIENT);

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'v2resources');
    await s.check('`cortex demo` loads the demo workspace', () => loadDemo(dataDir), { fatal: true });
    const token = await s.check('token create (read,act)', () => createToken(dataDir, WORKSPACE, 'read,act'), { fatal: true });
    const server = await s.check('serve starts', () => startServer(s, dataDir), { fatal: true });
    const client = new Client({ name: 'cortex-interop-v2-resources', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    const transport = new StreamableHTTPClientTransport(server.mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    await s.check(`v2 client connects pinned to ${MODERN}`, () => client.connect(transport, { timeout: 15_000 }), { fatal: true });
    await s.check(`negotiated ${MODERN}`, () => expectEqual(client.getNegotiatedProtocolVersion(), MODERN, 'version'));
    const decisionId = await s.check('action.communicate holds a draft for approval', () => draftForApproval(client), { fatal: true });
    await checkResourcesAndPrompts(s, client, 'v2 http', decisionId, -32602);
    await client.close().catch(() => {});
    await s.check('server stops', async () => {
        const { code } = await server.stop();
        expectEqual(code, 0, 'exit code');
    });
});
