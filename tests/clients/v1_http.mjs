// Official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) client against
// `cortex serve` over Streamable HTTP with a bearer token (protocol 2025-11-25).
//
//   CORTEX_BIN=/path/to/cortex node v1_http.mjs

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

import { CORE_TOOL_CHECKS, V1_HANDSHAKE_CHECKS, checkCoreTools, checkV1Handshake } from './core.mjs';
import {
    Suite,
    connectError,
    createToken,
    describeError,
    expect,
    expectEqual,
    expectNoTransportErrors,
    expectSigtermExit0,
    initializeBody,
    makeDataDir,
    rawPost,
    startServer,
    tapTransport
} from './lib.mjs';

const WORKSPACE = 'sdk-v1-http';
const PROTOCOL = '2025-11-25';
const suite = new Suite('v1_http', 11 + V1_HANDSHAKE_CHECKS + CORE_TOOL_CHECKS);

function newClient() {
    return new Client({ name: 'cortex-interop-v1-http', version: '1.0.0' }, { capabilities: {} });
}

function newTransport(url, token) {
    return new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } }
    });
}

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'v1http');
    const token = await s.check('token create prints a bearer token', () => createToken(dataDir, WORKSPACE), { fatal: true });
    const server = await s.check('serve starts and GET /healthz answers 200', () => startServer(s, dataDir), { fatal: true });

    await s.check('SDK v1 targets protocol 2025-11-25', () => {
        expectEqual(LATEST_PROTOCOL_VERSION, PROTOCOL, 'sdk LATEST_PROTOCOL_VERSION');
    });

    await s.check('POST /mcp without Authorization is HTTP 401', async () => {
        const r = await rawPost(server.mcpUrl, initializeBody());
        expectEqual(r.status, 401, 'status');
    });

    await s.check('POST /mcp with a wrong bearer token is HTTP 401', async () => {
        const r = await rawPost(server.mcpUrl, initializeBody(), { Authorization: `Bearer ${token}x` });
        expectEqual(r.status, 401, 'status');
    });

    await s.check('v1 client with a wrong token fails to connect with 401', async () => {
        const err = await connectError(newClient(), newTransport(server.mcpUrl, 'wrong-' + token));
        expect(err, 'connect() unexpectedly succeeded with a wrong token');
        expect(
            (err instanceof StreamableHTTPError && err.code === 401) || /\b401\b/.test(String(err.message)),
            `expected an HTTP 401 error, got ${describeError(err)}`
        );
    });

    // ---- the real session
    const client = newClient();
    const transport = newTransport(server.mcpUrl, token);
    const tap = tapTransport(transport);
    const transportErrors = [];
    client.onerror = err => transportErrors.push(err);

    await s.check('v1 client connects with the bearer token (initialize handshake)', () => client.connect(transport, { timeout: 15_000 }), {
        fatal: true
    });

    await checkV1Handshake(s, client, tap, PROTOCOL, { transport });
    await checkCoreTools(s, client, { workspace: WORKSPACE, unknownIdentifier: 'nobody-such@example.invalid' });

    await s.check('no transport errors during the session (incl. the GET /mcp SSE stream: 200 or 405)', () => {
        expectNoTransportErrors(transportErrors);
    });

    await s.check('session ends cleanly (DELETE /mcp if a session id was assigned, then close)', async () => {
        if (transport.sessionId) await transport.terminateSession(); // 2xx or 405 accepted by the SDK
        await client.close();
    });

    await s.check('SIGTERM stops the server with exit code 0', () => expectSigtermExit0(server));

    await s.check('server stops listening after exit', async () => {
        let reachable = true;
        try {
            await fetch(`${server.baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) });
        } catch {
            reachable = false;
        }
        expect(!reachable, 'healthz still answers after the server exited');
    });
});
