// Shared checks of a connected client against the core tools and the handshake, run by
// v1_http.mjs and v1_stdio.mjs (SDK v1, 2025-11-25, over HTTP and stdio) and v2_http.mjs
// (SDK v2, 2026-07-28 over HTTP): each script connects its own way, then calls these.

import { expect, expectCoreTools, expectEqual, expectToolError, expectWorkspaceStatus, responseTo, show } from './lib.mjs';

export const CORE_TOOL_CHECKS = 4;

/**
 * Runs CORE_TOOL_CHECKS checks with a connected `client`: tools/list names workspace.status
 * and entity.lookup, workspace.status answers for `workspace`, entity.lookup refuses an
 * unknown identifier (`unknownIdentifier`) and a missing one. `listToolsOptions`: the
 * request options of tools/list (v2 caches the list: { cacheMode: 'refresh' }).
 */
export async function checkCoreTools(s, client, { workspace, unknownIdentifier, listToolsOptions }) {
    await s.check('tools/list has workspace.status and entity.lookup with input and output schemas', async () => {
        const { tools } = listToolsOptions === undefined ? await client.listTools() : await client.listTools(undefined, listToolsOptions);
        expectCoreTools(tools, 'tools/list');
    });

    await s.check('workspace.status returns the workspace (structuredContent == JSON text)', async () => {
        const result = await client.callTool({ name: 'workspace.status', arguments: {} });
        expectWorkspaceStatus(result, workspace, 'workspace.status');
    });

    await s.check('entity.lookup with an unknown identifier is a tool error not_found', async () => {
        const result = await client.callTool({ name: 'entity.lookup', arguments: { identifier: unknownIdentifier } });
        expectToolError(result, 'not_found', 'entity.lookup(unknown)');
    });

    await s.check('entity.lookup without identifier is a tool error invalid_arguments naming the field', async () => {
        const result = await client.callTool({ name: 'entity.lookup', arguments: {} });
        const body = expectToolError(result, 'invalid_arguments', 'entity.lookup({})');
        expect(body.message.includes('identifier'), `message should mention "identifier": ${show(body.message)}`);
    });
}

export const V1_HANDSHAKE_CHECKS = 2;

/**
 * Runs V1_HANDSHAKE_CHECKS checks of an SDK v1 session (`tap`: tapTransport of its transport):
 * initialize negotiated `protocol` and named the server and its tools capability, and ping
 * answers. With `transport` (HTTP) it also checks the version the transport sends as
 * MCP-Protocol-Version, and reports the server and whether a session id was assigned.
 */
export async function checkV1Handshake(s, client, tap, protocol, { transport } = {}) {
    await s.check(`negotiated protocol version is ${protocol}`, () => {
        const init = responseTo(tap, 'initialize');
        expect(init && init.result, `no initialize result recorded: ${show(init)}`);
        expectEqual(init.result.protocolVersion, protocol, 'initialize result.protocolVersion');
        if (transport) expectEqual(transport.protocolVersion, protocol, 'transport.protocolVersion (sent as MCP-Protocol-Version)');
        const info = client.getServerVersion();
        expect(info && typeof info.name === 'string' && info.name.length > 0, `serverInfo.name missing: ${show(info)}`);
        expect(client.getServerCapabilities()?.tools, `server capabilities lack "tools": ${show(client.getServerCapabilities())}`);
        if (transport) s.info(`server ${info.name} ${info.version}; session id ${transport.sessionId ? 'assigned' : 'not assigned'}`);
    });

    await s.check('ping', async () => {
        const r = await client.ping();
        expect(r && typeof r === 'object', `ping result: ${show(r)}`);
    });
}
