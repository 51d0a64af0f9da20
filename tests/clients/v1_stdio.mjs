// Official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) client against
// `cortex mcp --stdio` (token in CORTEX_TOKEN; protocol 2025-11-25).
//
//   CORTEX_BIN=/path/to/cortex node v1_stdio.mjs

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { CORE_TOOL_CHECKS, V1_HANDSHAKE_CHECKS, checkCoreTools, checkV1Handshake } from './core.mjs';
import {
    Suite,
    connectError,
    createToken,
    describeError,
    expect,
    expectNoTransportErrors,
    makeDataDir,
    requireCortexBin,
    tapTransport
} from './lib.mjs';

const WORKSPACE = 'sdk-v1-stdio';
const PROTOCOL = '2025-11-25';
const suite = new Suite('v1_stdio', 6 + V1_HANDSHAKE_CHECKS + CORE_TOOL_CHECKS);

function newTransport(dataDir, token) {
    return new StdioClientTransport({
        command: requireCortexBin(),
        args: ['mcp', '--stdio', '--data', dataDir],
        // The SDK merges this over its safe default env (HOME, PATH, ...).
        env: { CORTEX_TOKEN: token },
        stderr: 'pipe'
    });
}

function collectStderr(transport) {
    let text = '';
    transport.stderr?.on('data', d => (text += d));
    return () => text;
}

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'v1stdio');
    const token = await s.check('token create prints a bearer token', () => createToken(dataDir, WORKSPACE), { fatal: true });

    const client = new Client({ name: 'cortex-interop-v1-stdio', version: '1.0.0' }, { capabilities: {} });
    const transport = newTransport(dataDir, token);
    const stderr = collectStderr(transport);
    const tap = tapTransport(transport);
    const transportErrors = [];
    client.onerror = err => transportErrors.push(err);
    let child;
    let childExit;
    s.onCleanup(async () => {
        if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        if (s.failed > 0 && stderr().trim()) console.log(`---- cortex mcp --stdio stderr (tail) ----\n${stderr().slice(-2000)}\n------------------------------------------`);
    });

    await s.check('v1 client spawns `cortex mcp --stdio` and completes initialize', async () => {
        await client.connect(transport, { timeout: 15_000 });
        // Keep a handle on the child to observe how it exits on close().
        child = transport._process;
        expect(child, 'StdioClientTransport has no child process handle');
        childExit = new Promise(resolve => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
    }, { fatal: true });

    await checkV1Handshake(s, client, tap, PROTOCOL);
    await checkCoreTools(s, client, { workspace: WORKSPACE, unknownIdentifier: '@no_such_handle' });

    await s.check('stdout carried only JSON-RPC (no transport/parse errors)', () => {
        expectNoTransportErrors(transportErrors);
    });

    await s.check('close(): server exits with code 0 once stdin is closed', async () => {
        const closedAt = Date.now();
        await client.close();
        const timeout = new Promise(resolve => setTimeout(() => resolve('timeout'), 10_000).unref());
        const r = await Promise.race([childExit, timeout]);
        expect(r !== 'timeout', 'server process did not exit within 10s of close()');
        expect(r.code === 0, `exit code ${r.code}, signal ${r.signal}`);
        // The SDK sends SIGTERM only if the process is still alive 2s after stdin EOF.
        s.info(`server exited ${r.at - closedAt}ms after close() (${r.at - closedAt < 2000 ? 'on stdin EOF' : 'after SIGTERM'})`);
    });

    await s.check('a wrong CORTEX_TOKEN is refused (connect fails)', async () => {
        const bad = new Client({ name: 'cortex-interop-v1-stdio-bad', version: '1.0.0' }, { capabilities: {} });
        const err = await connectError(bad, newTransport(dataDir, 'wrong-' + token));
        expect(err, 'connect() unexpectedly succeeded with a wrong CORTEX_TOKEN');
        s.info(`wrong token -> ${describeError(err)}`);
    });

    await s.check('a missing CORTEX_TOKEN is refused (connect fails)', async () => {
        const bad = new Client({ name: 'cortex-interop-v1-stdio-none', version: '1.0.0' }, { capabilities: {} });
        const badTransport = new StdioClientTransport({
            command: requireCortexBin(),
            args: ['mcp', '--stdio', '--data', dataDir],
            stderr: 'pipe'
        });
        const err = await connectError(bad, badTransport);
        expect(err, 'connect() unexpectedly succeeded without CORTEX_TOKEN');
    });
});
