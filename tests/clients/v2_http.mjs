// Official MCP TypeScript SDK v2 (@modelcontextprotocol/client) against
// `cortex serve` over Streamable HTTP, negotiating protocol 2026-07-28 via
// `server/discover` (stateless era: no initialize, per-request _meta).
//
//   CORTEX_BIN=/path/to/cortex node v2_http.mjs
//
// The v2 client only negotiates the 2026 era when asked to
// (ClientOptions.versionNegotiation; the default 'legacy' mode sends a plain
// 2025 initialize). We use mode 'auto' — probe with server/discover, fall back
// to initialize only without definitive modern evidence — and assert that the
// fallback did NOT happen. A second client pins 2026-07-28 (no fallback).

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { CORE_TOOL_CHECKS, checkCoreTools } from './core.mjs';
import {
    Suite,
    connectError,
    createToken,
    describeError,
    expect,
    expectEqual,
    expectNoTransportErrors,
    expectSigtermExit0,
    expectWorkspaceStatus,
    makeDataDir,
    show,
    startServer
} from './lib.mjs';

const WORKSPACE = 'sdk-v2-http';
const MODERN = '2026-07-28';
const PV_META = 'io.modelcontextprotocol/protocolVersion';
const suite = new Suite('v2_http', 10 + CORE_TOOL_CHECKS);

/** fetch wrapper recording every HTTP exchange the transport makes. */
function recordingFetch(log) {
    return async (input, init = {}) => {
        const headers = new Headers(init.headers);
        let body;
        if (typeof init.body === 'string') {
            try {
                body = JSON.parse(init.body);
            } catch {
                body = init.body;
            }
        }
        const msgs = body === undefined ? [] : Array.isArray(body) ? body : [body];
        const entry = {
            httpMethod: init.method ?? 'GET',
            rpcMethods: msgs.filter(m => m && typeof m.method === 'string').map(m => m.method),
            messages: msgs,
            protocolHeader: headers.get('mcp-protocol-version'),
            mcpMethodHeader: headers.get('mcp-method'),
            mcpNameHeader: headers.get('mcp-name'),
            sessionHeader: headers.get('mcp-session-id'),
            authorization: headers.get('authorization'),
            status: undefined,
            responseSessionId: undefined
        };
        log.push(entry);
        const res = await fetch(input, init);
        entry.status = res.status;
        entry.responseSessionId = res.headers.get('mcp-session-id');
        return res;
    };
}

function newClient(mode) {
    return new Client({ name: 'cortex-interop-v2-http', version: '1.0.0' }, { versionNegotiation: { mode } });
}

function newTransport(url, token, log) {
    return new StreamableHTTPClientTransport(url, {
        // Static bearer: requestInit.headers go on every POST/GET/DELETE.
        // (Equivalent: authProvider: { token: async () => token }.)
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
        fetch: recordingFetch(log)
    });
}

const sentRpc = (log, method) => log.filter(e => e.rpcMethods.includes(method));

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'v2http');
    const token = await s.check('token create prints a bearer token', () => createToken(dataDir, WORKSPACE), { fatal: true });
    const server = await s.check('serve starts and GET /healthz answers 200', () => startServer(s, dataDir), { fatal: true });

    await s.check('v2 client with a wrong token fails to connect with 401', async () => {
        const log = [];
        const err = await connectError(newClient('auto'), newTransport(server.mcpUrl, 'wrong-' + token, log));
        expect(err, 'connect() unexpectedly succeeded with a wrong token');
        expect(err.data?.status === 401 || /\b401\b/.test(String(err.message)), `expected an HTTP 401 error, got ${describeError(err)}`);
        expect(log.length > 0 && log.every(e => e.status === 401), `expected only 401 responses, got ${show(log.map(e => [e.rpcMethods, e.status]))}`);
    });

    // ---- the real session, mode 'auto'
    const log = [];
    const client = newClient('auto');
    const transport = newTransport(server.mcpUrl, token, log);
    const transportErrors = [];
    client.onerror = err => transportErrors.push(err);

    await s.check("v2 client connects (versionNegotiation mode 'auto')", () => client.connect(transport, { timeout: 15_000 }), { fatal: true });

    await s.check(`server/discover negotiated ${MODERN} (modern era, no initialize sent)`, () => {
        const discoverPosts = sentRpc(log, 'server/discover');
        expect(discoverPosts.length >= 1, `server/discover was never POSTed; requests: ${show(log.map(e => e.rpcMethods))}`);
        expectEqual(log[0].rpcMethods, ['server/discover'], 'first request');
        expectEqual(discoverPosts[0].status, 200, 'server/discover HTTP status');
        expectEqual(discoverPosts[0].protocolHeader, MODERN, 'MCP-Protocol-Version header on server/discover');
        expectEqual(sentRpc(log, 'initialize').length, 0, 'initialize requests sent');
        expectEqual(sentRpc(log, 'notifications/initialized').length, 0, 'notifications/initialized sent');
        expectEqual(client.getNegotiatedProtocolVersion(), MODERN, 'client.getNegotiatedProtocolVersion()');
        expectEqual(client.getProtocolEra(), 'modern', 'client.getProtocolEra()');
        expectEqual(transport.protocolVersion, MODERN, 'transport.protocolVersion');
        const discover = client.getDiscoverResult();
        expect(discover && Array.isArray(discover.supportedVersions), `no DiscoverResult: ${show(discover)}`);
        expect(discover.supportedVersions.includes(MODERN), `supportedVersions lacks ${MODERN}: ${show(discover.supportedVersions)}`);
        expect(client.getServerCapabilities()?.tools, `discover capabilities lack "tools": ${show(client.getServerCapabilities())}`);
        s.info(`discover: supportedVersions=${show(discover.supportedVersions)} serverInfo=${show(client.getServerVersion())}`);
    });

    await checkCoreTools(s, client, { workspace: WORKSPACE, unknownIdentifier: 'nobody@nowhere.example', listToolsOptions: { cacheMode: 'refresh' } });

    await s.check(`every request after discover carried MCP-Protocol-Version ${MODERN}, Mcp-Method and _meta`, () => {
        const posts = log.filter(e => e.httpMethod === 'POST' && e.messages.some(m => m.id !== undefined && m.method));
        const later = posts.filter(e => !e.rpcMethods.includes('server/discover'));
        expect(later.some(e => e.rpcMethods.includes('tools/list')), 'no tools/list POST recorded');
        expect(later.filter(e => e.rpcMethods.includes('tools/call')).length >= 3, 'expected >= 3 tools/call POSTs');
        for (const e of later) {
            const m = e.messages[0];
            expectEqual(e.protocolHeader, MODERN, `MCP-Protocol-Version on ${m.method}`);
            expectEqual(e.mcpMethodHeader, m.method, `Mcp-Method on ${m.method}`);
            expectEqual(m.params?._meta?.[PV_META], MODERN, `params._meta["${PV_META}"] on ${m.method}`);
            expectEqual(e.status, 200, `HTTP status of ${m.method}`);
            expect(e.authorization === `Bearer ${token}`, `Authorization header missing on ${m.method}`);
            if (m.method === 'tools/call') expectEqual(e.mcpNameHeader, m.params.name, 'Mcp-Name on tools/call');
        }
        const gets = log.filter(e => e.httpMethod === 'GET');
        s.info(`HTTP exchanges: ${log.map(e => `${e.httpMethod} ${e.rpcMethods.join('+') || '-'} -> ${e.status}`).join(', ')}${gets.length ? '' : ' (no GET stream opened)'}`);
    });

    await s.check('no transport errors during the session', () => {
        expectNoTransportErrors(transportErrors);
    });

    await s.check('client closes cleanly', () => client.close());

    await s.check(`a client pinned to ${MODERN} connects and calls workspace.status`, async () => {
        const pinLog = [];
        const pinned = newClient({ pin: MODERN });
        try {
            await pinned.connect(newTransport(server.mcpUrl, token, pinLog), { timeout: 15_000 });
            expectEqual(pinned.getNegotiatedProtocolVersion(), MODERN, 'pinned negotiated version');
            expectEqual(sentRpc(pinLog, 'initialize').length, 0, 'initialize requests sent');
            const result = await pinned.callTool({ name: 'workspace.status', arguments: {} });
            expectWorkspaceStatus(result, WORKSPACE, 'workspace.status (pinned)');
        } finally {
            await pinned.close().catch(() => {});
        }
    });

    await s.check('SIGTERM stops the server with exit code 0', () => expectSigtermExit0(server));
});
