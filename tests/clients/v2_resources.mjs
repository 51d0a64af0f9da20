// Official MCP TypeScript SDK v2 (@modelcontextprotocol/client) against `cortex serve` in
// the 2026-07-28 era (server/discover, no session): resources, prompts and completions on
// the demo workspace, and the era's resource-not-found error (-32602); over Streamable HTTP
// (`cortex serve`), then over stdio (`cortex mcp --stdio`).
//
//   CORTEX_BIN=/path/to/cortex node v2_resources.mjs

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { Suite, createToken, expectSigtermExit0, expectEqual, makeDataDir, requireCortexBin, startServer } from './lib.mjs';
import { CHECKS_PER_CLIENT, WORKSPACE, checkResourcesAndPrompts, draftForApproval, loadDemo } from './resources.mjs';

const MODERN = '2026-07-28';
const suite = new Suite('v2_resources', 9 + 2 * CHECKS_PER_CLIENT);

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'v2resources');
    await s.check('`cortex demo` loads the demo workspace', () => loadDemo(dataDir), { fatal: true });
    const token = await s.check('token create (read,act)', () => createToken(dataDir, WORKSPACE, 'read,act'), { fatal: true });
    const server = await s.check('serve starts', () => startServer(s, dataDir), { fatal: true });
    const newClient = () => new Client({ name: 'cortex-interop-v2-resources', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    const client = newClient();
    const transport = new StreamableHTTPClientTransport(server.mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    await s.check(`v2 client connects pinned to ${MODERN}`, () => client.connect(transport, { timeout: 15_000 }), { fatal: true });
    await s.check(`negotiated ${MODERN}`, () => expectEqual(client.getNegotiatedProtocolVersion(), MODERN, 'version'));
    const decisionId = await s.check('action.communicate holds a draft for approval', () => draftForApproval(client), { fatal: true });
    await checkResourcesAndPrompts(s, client, 'v2 http', decisionId, -32602);
    await client.close().catch(() => {});
    await s.check('server stops', () => expectSigtermExit0(server));

    // The same over stdio (one process at a time on the data directory).
    const stdio = newClient();
    const transport2 = new StdioClientTransport({
        command: requireCortexBin(),
        args: ['mcp', '--stdio', '--data', dataDir],
        env: { CORTEX_TOKEN: token },
        stderr: 'pipe'
    });
    await s.check(`v2 stdio client connects pinned to ${MODERN}`, () => stdio.connect(transport2, { timeout: 15_000 }), { fatal: true });
    await s.check(`negotiated ${MODERN} over stdio`, () => expectEqual(stdio.getNegotiatedProtocolVersion(), MODERN, 'version'));
    await checkResourcesAndPrompts(s, stdio, 'v2 stdio', decisionId, -32602);
    await stdio.close().catch(() => {});
});
