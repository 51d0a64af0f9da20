// The official MCP TypeScript SDK v2 (@modelcontextprotocol/client) OAuth client against
// `cortex serve`: the flow in oauth_flow.mjs. v2's finishAuth takes the redirect's
// parameters, code and iss, and checks the issuer against the one it discovered.
//
//   CORTEX_BIN=/path/to/cortex node v2_oauth.mjs

import { Client, StreamableHTTPClientTransport, UnauthorizedError, auth } from '@modelcontextprotocol/client';

import { runOAuthFlow } from './oauth_flow.mjs';

await runOAuthFlow({
    era: 'v2',
    sdk: { Client, StreamableHTTPClientTransport, UnauthorizedError, auth },
    workspace: 'oauth2',
    finishAuthWith: params => params,
});
