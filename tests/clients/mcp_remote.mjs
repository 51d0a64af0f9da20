// mcp-remote (the stdio-to-remote bridge desktop clients use for remote MCP servers) against
// `cortex serve` with OAuth, as a person with a stdio-only client would run it (issue #34):
// it meets the 401, discovers the authorization server, registers, and opens "the browser"
// at the consent page. Here $BROWSER records the URL and Debian's Chromium, driven by
// Playwright and signed in to the inbox by a `cortex inbox link`, allows it; mcp-remote takes
// the code on its loopback callback, exchanges it with PKCE, and the stdio client calls a
// tool. A second run reuses the stored tokens with no browser at all; after revocation the
// bridge has to send the person to the consent page again.
//
//   CORTEX_BIN=/path/to/cortex node mcp_remote.mjs

import { chmod, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { Suite, expect, expectEqual, expectSigtermExit0, makeDataDir, createToken, show, startServer } from './lib.mjs';
import { cli, signedInPage } from './person.mjs';

const WORKSPACE = 'remote';
const PROXY = path.join(path.dirname(createRequire(import.meta.url).resolve('mcp-remote/package.json')),
    'dist', 'proxy.js');
const suite = new Suite('mcp_remote', 7);

async function opened(file) {
    return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}

/** Polls until `file` holds more than `count` URLs; returns the newest. */
async function nextOpened(file, count, timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const urls = await opened(file);
        if (urls.length > count) return urls[urls.length - 1];
        if (Date.now() > deadline) throw new Error(`mcp-remote opened no browser within ${timeoutMs} ms`);
        await new Promise(r => setTimeout(r, 100));
    }
}

await suite.run(async s => {
    const dataDir = await makeDataDir(s, 'mcpremote');
    await createToken(dataDir, WORKSPACE, 'read'); // the workspace
    const server = await s.check('serve starts', () => startServer(s, dataDir), { fatal: true });

    // "The browser" mcp-remote opens (through xdg-open, which honours $BROWSER without a
    // display): it writes down the URL for the person's Chromium below.
    const openedFile = path.join(dataDir, 'opened.txt');
    const browserScript = path.join(dataDir, 'browser.sh');
    await writeFile(browserScript, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${openedFile}'\n`);
    await chmod(browserScript, 0o755);
    const env = {
        ...process.env,
        BROWSER: browserScript,
        DISPLAY: '', WAYLAND_DISPLAY: '',
        MCP_REMOTE_CONFIG_DIR: path.join(dataDir, 'mcp-auth'),
    };
    const bridge = () => {
        const transport = new StdioClientTransport({
            command: process.execPath,
            args: [PROXY, server.mcpUrl, '--allow-http', '--transport', 'http-only'],
            env, stderr: 'pipe',
        });
        const stderr = [];
        transport.stderr?.on('data', d => stderr.push(String(d)));
        const client = new Client({ name: 'stdio-only desktop client', version: '1.0.0' }, { capabilities: {} });
        return { transport, client, stderr: () => stderr.join('') };
    };

    const page = await s.check('the person signs in to the inbox with a `cortex inbox link`',
        () => signedInPage(s, server, dataDir, WORKSPACE), { fatal: true });

    await s.check('first run: 401, discovery, registration, one consent page, then a tool call', async () => {
        const b = bridge();
        s.onCleanup(() => b.client.close());
        const connecting = b.client.connect(b.transport);
        let consented = '';
        try {
            const url = new URL(await nextOpened(openedFile, 0));
            expectEqual(`${url.origin}${url.pathname}`, `${server.baseUrl}/inbox/authorize`, 'the browser opened');
            expectEqual(url.searchParams.get('code_challenge_method'), 'S256', 'PKCE');
            await page.goto(url.toString());
            consented = await page.locator('main').innerText();
            await page.click('#allow');
            await connecting;
        } catch (e) {
            throw new Error(`${e.message}\nmcp-remote said:\n${b.stderr()}`);
        }
        expect(consented.includes(WORKSPACE), `the consent page names the workspace: ${consented}`);
        const result = await b.client.callTool({ name: 'workspace.status', arguments: {} });
        expect(result.isError !== true, `workspace.status: ${show(result)}`);
        expectEqual(result.structuredContent.workspace, WORKSPACE, 'workspace');
        await b.client.close();
    }, { fatal: true });

    let tokenId;
    await s.check('`cortex token list` shows the grant with its client', async () => {
        const list = await cli(['token', 'list', '--data', dataDir, '--workspace', WORKSPACE]);
        const row = list.split('\n').find(l => l.includes('cli_') && l.includes('active'));
        expect(row, `token list: ${list}`);
        tokenId = row.split('\t')[0];
    }, { fatal: true });

    await s.check('second run: the stored tokens are used, no browser opens', async () => {
        const b = bridge();
        await b.client.connect(b.transport);
        const result = await b.client.callTool({ name: 'decision.list', arguments: {} });
        expect(result.isError !== true, `decision.list: ${show(result)}\n${b.stderr()}`);
        expectEqual((await opened(openedFile)).length, 1, 'browser openings');
        await b.client.close();
    });

    await s.check('revoked with `cortex token revoke`: the bridge must ask the person again', async () => {
        const b = bridge();
        await b.client.connect(b.transport);
        await cli(['token', 'revoke', '--data', dataDir, '--workspace', WORKSPACE, tokenId]);
        const call = b.client.callTool({ name: 'decision.list', arguments: {} }).then(
            r => `answered ${show(r)}`, e => `failed: ${e.message}`);
        const outcome = await Promise.race([
            nextOpened(openedFile, 1).then(url => ({ url })),
            call.then(answer => ({ answer })),
        ]);
        expect(outcome.url, `no new consent page; the call ${outcome.answer}\n${b.stderr()}`);
        expectEqual(new URL(outcome.url).pathname, '/inbox/authorize', 'the browser opened');
        await b.client.close().catch(() => {});
    });

    await s.check('serve stops on SIGTERM with exit 0', () => expectSigtermExit0(server));
});
