// The official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) OAuth client against
// `cortex serve`: the flow in oauth_flow.mjs.
//
//   CORTEX_BIN=/path/to/cortex node v1_oauth.mjs

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { runOAuthFlow } from './oauth_flow.mjs';

await runOAuthFlow({
    era: 'v1',
    sdk: { Client, StreamableHTTPClientTransport, UnauthorizedError, auth },
    workspace: 'oauth',
    finishAuthWith: params => params.get('code'),
});
