// Official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) client against `cortex serve`
// over Streamable HTTP, in a 2025-11-25 session whose client can ask its user
// (capabilities.elicitation): action.communicate at level 1, called with a person's
// read,act,approve token, sends an elicitation/create request on the call's own stream;
// the SDK's handler answers it (the person approves with an edit, or rejects) and the
// call's result follows on the same stream. The answer is recorded with channel
// `elicitation`. An agent's read,act token, or a client that cannot ask, is never asked.
//
//   CORTEX_BIN=/path/to/cortex node v1_elicit.mjs

import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { Suite, createToken, expect, expectEqual, makeDataDir, requireCortexBin, show, startServer } from './lib.mjs';

const suite = new Suite('v1_elicit', 7);
const MARCUS = 'marcus@h.example';

function cortex(...args) {
    return new Promise(resolve => {
        execFile(requireCortexBin(), args, { timeout: 30_000 }, (error, stdout, stderr) => {
            resolve({ code: error ? (error.code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) });
        });
    });
}

/** A client that declares elicitation (or not) and answers each form with `answer(params)`. */
async function connect(server, token, { elicits, answer }) {
    const client = new Client({ name: 'cortex-interop-v1-elicit', version: '1.0.0' },
        { capabilities: elicits ? { elicitation: {} } : {} });
    const asked = [];
    if (elicits) {
        client.setRequestHandler(ElicitRequestSchema, async request => {
            asked.push(request.params);
            return answer(request.params);
        });
    }
    await client.connect(new StreamableHTTPClientTransport(server.mcpUrl, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } }
    }), { timeout: 15_000 });
    return { client, asked };
}

function send(client, message) {
    return client.callTool({ name: 'action.communicate', arguments: { to: MARCUS, message } });
}

async function history(client, decisionId) {
    const r = await client.callTool({ name: 'decision.inspect', arguments: { decision_id: decisionId } });
    return r.structuredContent.history;
}

await suite.run(async s => {
    const data = await makeDataDir(s, 'elicit');
    const world = join(data, 'world.jsonl');
    await writeFile(world, JSON.stringify({ type: 'entity', name: 'Marcus Webb', identifiers: [MARCUS] }) + '\n');
    const ingested = await cortex('ingest', '--data', data, '--workspace', 'alpha', world);
    expect(ingested.code === 0, `cortex ingest failed: ${ingested.stderr}`);
    const person = await createToken(data, 'alpha', 'read,act,approve');
    const agent = await createToken(data, 'alpha', 'read,act');
    const server = await startServer(s, data);

    const approving = await connect(server, person, {
        elicits: true,
        answer: () => ({ action: 'accept', content: { decision: 'approve', message: 'Could Friday work instead?' } })
    });
    const approved = await s.check('a level-1 draft is put to the person in their client, and sent as they edited it', async () => {
        const r = await send(approving.client, 'Can we move the review?');
        expectEqual(approving.asked.length, 1, 'elicitation requests');
        expect(approving.asked[0].message.includes('Marcus Webb'), `the form names the recipient: ${show(approving.asked[0].message)}`);
        expect(approving.asked[0].requestedSchema.required.includes('decision'), 'the form asks for a decision');
        expectEqual(r.structuredContent.status, 'success', 'status');
        expectEqual(r.structuredContent.draft, 'Could Friday work instead?', 'the text sent');
        return r.structuredContent;
    });
    await s.check('the approval is on record as the person\'s, through elicitation', async () => {
        const h = await history(approving.client, approved.decision_id);
        const a = h.find(e => e.event === 'approved');
        expect(a, `an approved event: ${show(h)}`);
        expectEqual(a.by.channel, 'elicitation', 'channel');
    });

    const rejecting = await connect(server, person, {
        elicits: true,
        answer: () => ({ action: 'accept', content: { decision: 'reject', reason: 'Not now' } })
    });
    await s.check('a rejection in the client ends the draft', async () => {
        const r = await send(rejecting.client, 'Lunch on Thursday?');
        expectEqual(rejecting.asked.length, 1, 'elicitation requests');
        const h = await history(rejecting.client, r.structuredContent.decision_id);
        expect(h.some(e => e.event === 'rejected' && e.by.channel === 'elicitation'), `rejected by elicitation: ${show(h)}`);
    });

    const declining = await connect(server, person, { elicits: true, answer: () => ({ action: 'decline' }) });
    await s.check('a declined form leaves the draft waiting in the inbox', async () => {
        const r = await send(declining.client, 'Coffee next week?');
        expectEqual(r.structuredContent.status, 'pending_approval', 'status');
        expect(r.structuredContent.message.includes('inbox'), `says where it waits: ${show(r.structuredContent.message)}`);
    });

    const agentClient = await connect(server, agent, { elicits: true, answer: () => ({ action: 'accept', content: { decision: 'approve' } }) });
    await s.check('an agent\'s read,act token is never asked, whatever it declares', async () => {
        const r = await send(agentClient.client, 'Status update?');
        expectEqual(agentClient.asked.length, 0, 'elicitation requests');
        expectEqual(r.structuredContent.status, 'pending_approval', 'status');
    });

    const mute = await connect(server, person, { elicits: false });
    await s.check('a client that cannot ask gets pending_approval, as before', async () => {
        const r = await send(mute.client, 'Status update?');
        expectEqual(r.structuredContent.status, 'pending_approval', 'status');
    });

    await s.check('the ledger verifies', async () => {
        for (const c of [approving, rejecting, declining, agentClient, mute]) await c.client.close();
        await server.stop();
        const v = await cortex('ledger', 'verify', '--data', data);
        expect(v.code === 0, `cortex ledger verify: ${v.stdout} ${v.stderr}`);
    });
});
