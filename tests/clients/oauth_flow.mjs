// The OAuth flow of issue #34, run by an official MCP TypeScript SDK client against
// `cortex serve` with no token copied by hand: discovery from a 401, dynamic client
// registration, authorization with PKCE through the consent page (the inbox's, in Debian's
// Chromium, signed in by a `cortex inbox link`), the token exchange, a tool call, a refresh,
// and revocation. v1_oauth.mjs and v2_oauth.mjs run it with each SDK.

import { createServer } from 'node:http';

import { Suite, expect, expectEqual, expectSigtermExit0, makeDataDir, createToken, show, startServer } from './lib.mjs';
import { cli, signedInPage } from './person.mjs';

/** A loopback listener for the redirect: resolves each code (or error) it receives. */
async function callbackServer() {
    let waiting = [];
    const srv = createServer((req, res) => {
        const url = new URL(req.url, 'http://127.0.0.1');
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('You can close this window.');
        const next = waiting.shift();
        if (next) next(url.searchParams);
    });
    await new Promise(resolve => srv.listen(0, '127.0.0.1', resolve));
    return {
        url: `http://127.0.0.1:${srv.address().port}/callback`,
        next: () => new Promise(resolve => waiting.push(resolve)),
        close: () => new Promise(resolve => srv.close(resolve)),
    };
}

/** The SDK's OAuthClientProvider, as a desktop client implements it, with a browser. */
class Provider {
    constructor(name, redirectUrl, page) {
        this.name = name;
        this.redirect = redirectUrl;
        this.page = page;
        this.info = undefined;
        this.saved = undefined;
        this.verifier = undefined;
        this.consented = undefined; // the consent page's text, for the checks
    }
    get redirectUrl() { return this.redirect; }
    get clientMetadata() {
        return {
            client_name: this.name,
            redirect_uris: [this.redirect],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none',
        };
    }
    clientInformation() { return this.info; }
    saveClientInformation(info) { this.info = info; }
    tokens() { return this.saved; }
    saveTokens(tokens) { this.saved = tokens; }
    saveCodeVerifier(v) { this.verifier = v; }
    codeVerifier() { return this.verifier; }
    // v2 checks on the callback that the code came from the authorization server it found
    // (v1 never calls these).
    saveDiscoveryState(state) { this.discovery = state; }
    discoveryState() { return this.discovery; }
    async redirectToAuthorization(url) {
        // The person's browser opens the authorization URL and allows the app.
        await this.page.goto(url.toString());
        this.consented = await this.page.locator('main').innerText();
        await this.page.click('#allow');
    }
}

/**
 * The whole flow with one SDK era: `sdk` holds its Client, StreamableHTTPClientTransport,
 * UnauthorizedError and auth; `finishAuthWith(params)` is what its transport's finishAuth
 * takes from the redirect's parameters (v1: the code; v2: all of them, to check `iss`).
 */
export async function runOAuthFlow({ era, sdk, workspace, finishAuthWith }) {
    const { Client, StreamableHTTPClientTransport, UnauthorizedError, auth } = sdk;
    const appName = `SDK ${era} test client`;
    const clientInfo = { name: `cortex-oauth-${era}`, version: '1.0.0' };
    await new Suite(`${era}_oauth`, 10).run(async s => {
        const dataDir = await makeDataDir(s, `${era}oauth`);
        await createToken(dataDir, workspace, 'read'); // the workspace
        const server = await s.check('serve starts', () => startServer(s, dataDir), { fatal: true });
        const callback = await callbackServer();
        s.onCleanup(() => callback.close());
        const page = await s.check('the person signs in to the inbox with a `cortex inbox link`',
            () => signedInPage(s, server, dataDir, workspace), { fatal: true });

        const provider = new Provider(appName, callback.url, page);
        let transport = new StreamableHTTPClientTransport(server.mcpUrl, { authProvider: provider });
        let client = new Client(clientInfo, { capabilities: {} });

        const code = await s.check('connecting without a token: 401, discovery, registration, consent', async () => {
            const redirected = callback.next();
            let err;
            try {
                await client.connect(transport);
            } catch (e) {
                err = e;
            }
            expect(err instanceof UnauthorizedError, `connect should stop for authorization, got ${show(err?.message)}`);
            expect(provider.info?.client_id?.startsWith('cli_'), `registered: ${show(provider.info)}`);
            expect(provider.consented.includes(appName), `consent page names the app: ${provider.consented}`);
            const params = await redirected;
            expect(params.get('code'), `redirect carries a code: ${params}`);
            expectEqual(params.get('iss'), server.baseUrl, 'iss');
            return params;
        }, { fatal: true });

        await s.check('finishAuth exchanges the code (PKCE) for tokens', async () => {
            await transport.finishAuth(finishAuthWith(code));
            expect(provider.saved?.access_token?.startsWith('cat_'), `tokens: ${show(provider.saved)}`);
            expect(provider.saved.refresh_token, 'a refresh token');
            expectEqual(provider.saved.scope, 'read act', 'scope');
        }, { fatal: true });

        await s.check('a tool call with the issued token', async () => {
            transport = new StreamableHTTPClientTransport(server.mcpUrl, { authProvider: provider });
            client = new Client(clientInfo, { capabilities: {} });
            await client.connect(transport);
            const result = await client.callTool({ name: 'workspace.status', arguments: {} });
            expect(result.isError !== true, `workspace.status: ${show(result)}`);
            expectEqual(result.structuredContent.workspace, workspace, 'workspace');
            await client.close();
        }, { fatal: true });

        await s.check('`cortex token list` shows the token with its client', async () => {
            const list = await cli(['token', 'list', '--data', dataDir, '--workspace', workspace]);
            const row = list.split('\n').find(l => l.includes(provider.info.client_id));
            expect(row && row.includes(appName) && row.includes('active'), `token list: ${list}`);
        });

        const before = provider.saved;
        await s.check('auth() refreshes: a new access and refresh token, the old ones spent', async () => {
            const r = await auth(provider, { serverUrl: server.mcpUrl });
            expectEqual(r, 'AUTHORIZED', 'auth()');
            expect(provider.saved.access_token !== before.access_token, 'a new access token');
            expect(provider.saved.refresh_token !== before.refresh_token, 'a new refresh token');
            const old = await fetch(server.mcpUrl, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${before.access_token}` },
                body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
            });
            expectEqual(old.status, 401, 'the old access token');
        });

        await s.check('the refreshed token calls a tool', async () => {
            transport = new StreamableHTTPClientTransport(server.mcpUrl, { authProvider: provider });
            client = new Client(clientInfo, { capabilities: {} });
            await client.connect(transport);
            const result = await client.callTool({ name: 'decision.list', arguments: {} });
            expect(result.isError !== true, `decision.list: ${show(result)}`);
            await client.close();
        });

        await s.check('revoked from the inbox: the client is refused and cannot refresh', async () => {
            await page.goto(`${server.baseUrl}/inbox/`);
            const app = page.locator('#apps li', { hasText: appName });
            await app.locator('button', { hasText: 'Disconnect' }).click();
            await app.waitFor({ state: 'detached', timeout: 10_000 });
            const denied = await fetch(server.mcpUrl, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${provider.saved.access_token}` },
                body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
            });
            expectEqual(denied.status, 401, 'the revoked access token');
            const list = await cli(['token', 'list', '--data', dataDir, '--workspace', workspace]);
            const row = list.split('\n').find(l => l.includes(provider.info.client_id));
            expect(row.includes('revoked'), `token list: ${list}`);
            const refresh = await fetch(`${server.baseUrl}/oauth/token`, {
                method: 'POST',
                headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
                body: new URLSearchParams({ grant_type: 'refresh_token', client_id: provider.info.client_id, refresh_token: provider.saved.refresh_token }),
            });
            expectEqual([refresh.status, (await refresh.json()).error], [400, 'invalid_grant'], 'refresh after revocation');
        });

        await s.check('serve stops on SIGTERM with exit 0', () => expectSigtermExit0(server));
    });
}
