// Shared checks of the MCP resources, prompts and completions, run by v1_resources.mjs
// (SDK v1, HTTP and stdio, 2025-11-25) and v2_resources.mjs (SDK v2, 2026-07-28) against the
// demo workspace with one draft waiting for approval.

import { execFile } from 'node:child_process';

import { expect, expectEqual, expectTextMirrorsStructured, requireCortexBin, show } from './lib.mjs';

export const WORKSPACE = 'demo';
export const SARAH = 'sarah.chen@northwind.example';
export const DRAFT_MESSAGE = 'Could we move the Q1 review to Thursday at 3pm?';
// Well-formed (dec_ + a ULID) but never minted.
export const UNKNOWN_DECISION = 'dec_7ZZZZZZZZZZZZZZZZZZZZZZZZZ';
export const CHECKS_PER_CLIENT = 9;

/** `cortex demo --data DIR`: loads the demo workspace. */
export function loadDemo(dataDir) {
    const bin = requireCortexBin();
    return new Promise((resolve, reject) => {
        execFile(bin, ['demo', '--data', dataDir], { timeout: 60_000, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
            if (error) reject(new Error(`cortex demo exited ${show(error.code ?? 1)}: ${String(stderr).trim()}`));
            else resolve(String(stdout));
        });
    });
}

/** action.communicate to Sarah: a draft held for approval; returns its decision id. */
export async function draftForApproval(client) {
    const result = await client.callTool({ name: 'action.communicate', arguments: { to: SARAH, message: DRAFT_MESSAGE } });
    const body = expectTextMirrorsStructured(result, 'action.communicate');
    expectEqual(body.status, 'pending_approval', 'action.communicate status');
    expect(/^dec_/.test(body.decision_id), `decision_id: ${show(body.decision_id)}`);
    return body.decision_id;
}

function jsonOf(contents, what) {
    expect(Array.isArray(contents) && contents.length === 1, `${what}: contents: ${show(contents)}`);
    expectEqual(contents[0].mimeType, 'application/json', `${what}: mimeType`);
    return JSON.parse(contents[0].text);
}

/**
 * Runs CHECKS_PER_CLIENT checks with a connected `client` (label names it in the output).
 * `notFoundCode`: the era's JSON-RPC code for an unknown resource.
 */
export async function checkResourcesAndPrompts(s, client, label, decisionId, notFoundCode) {
    await s.check(`${label}: capabilities advertise resources, prompts and completions`, () => {
        const caps = client.getServerCapabilities();
        expect(caps?.resources && caps?.prompts && caps?.completions, `capabilities: ${show(caps)}`);
    });

    await s.check(`${label}: resources/list and resources/templates/list name the inbox and the decision template`, async () => {
        const { resources } = await client.listResources();
        const uris = resources.map(r => r.uri);
        for (const uri of ['cortex://inbox', 'cortex://notifications/due', 'cortex://digest', 'cortex://rules']) {
            expect(uris.includes(uri), `resources/list lacks ${uri}: ${show(uris)}`);
        }
        const { resourceTemplates } = await client.listResourceTemplates();
        expect(
            resourceTemplates.some(t => t.uriTemplate === 'cortex://decisions/{decision_id}'),
            `templates: ${show(resourceTemplates.map(t => t.uriTemplate))}`
        );
    });

    await s.check(`${label}: reading cortex://inbox shows the draft waiting for approval`, async () => {
        const { contents } = await client.readResource({ uri: 'cortex://inbox' });
        const inbox = jsonOf(contents, 'cortex://inbox');
        const item = inbox.pending.find(p => p.decision_id === decisionId);
        expect(item, `the draft ${decisionId} is not in the inbox: ${show(inbox)}`);
        expectEqual(item.counterparty.name, 'Sarah Chen', 'inbox item counterparty');
        expectEqual(item.message, DRAFT_MESSAGE, 'inbox item message');
    });

    await s.check(`${label}: reading cortex://decisions/{id} (a template) gives the decision`, async () => {
        const { contents } = await client.readResource({ uri: `cortex://decisions/${decisionId}` });
        const d = jsonOf(contents, 'decision');
        expectEqual(d.decision_id, decisionId, 'decision_id');
        expectEqual(d.decision_class, 'action_proposed', 'decision_class');
        expectEqual(d.status, 'pending', 'status');
    });

    await s.check(`${label}: an unknown decision is the era's resource-not-found error (${notFoundCode})`, async () => {
        let err;
        try {
            await client.readResource({ uri: `cortex://decisions/${UNKNOWN_DECISION}` });
        } catch (e) {
            err = e;
        }
        expect(err, 'reading an unknown decision succeeded');
        expectEqual(err.code, notFoundCode, `error code (${err.message})`);
    });

    await s.check(`${label}: prompts/get why_did_you_do_that embeds the decision`, async () => {
        const { prompts } = await client.listPrompts();
        expectEqual(
            prompts.map(p => p.name),
            ['morning_briefing', 'review_approvals', 'why_did_you_do_that'],
            'prompts/list names'
        );
        const got = await client.getPrompt({ name: 'why_did_you_do_that', arguments: { decision_id: decisionId } });
        const embedded = got.messages.find(m => m.content.type === 'resource');
        expect(embedded, `no embedded resource: ${show(got.messages)}`);
        expectEqual(embedded.content.resource.uri, `cortex://decisions/${decisionId}`, 'embedded uri');
        expectEqual(JSON.parse(embedded.content.resource.text).decision_id, decisionId, 'embedded decision');
    });

    await s.check(`${label}: prompts/get morning_briefing holds the inbox with the draft`, async () => {
        const got = await client.getPrompt({ name: 'morning_briefing', arguments: {} });
        const inbox = got.messages.find(m => m.content.type === 'resource' && m.content.resource.uri === 'cortex://inbox');
        expect(inbox, `no inbox in the briefing: ${show(got.messages.map(m => m.content.resource?.uri ?? m.content.type))}`);
        expect(inbox.content.resource.text.includes(DRAFT_MESSAGE), 'the briefing inbox lacks the draft');
    });

    await s.check(`${label}: completion/complete offers the decision id from its first characters`, async () => {
        const prefix = decisionId.slice(0, 14);
        const { completion } = await client.complete({
            ref: { type: 'ref/prompt', name: 'why_did_you_do_that' },
            argument: { name: 'decision_id', value: prefix }
        });
        expect(completion.values.includes(decisionId), `values lack ${decisionId}: ${show(completion)}`);
        expect(completion.values.every(v => v.startsWith(prefix)), `a value does not start with ${prefix}: ${show(completion.values)}`);
    });

    await s.check(`${label}: completion/complete finds a counterparty by name`, async () => {
        const { completion } = await client.complete({
            ref: { type: 'ref/resource', uri: 'cortex://counterparties/{counterparty}' },
            argument: { name: 'counterparty', value: 'sar' }
        });
        expect(completion.values.includes(SARAH), `values lack ${SARAH}: ${show(completion)}`);
        const { contents } = await client.readResource({ uri: `cortex://counterparties/${completion.values[0]}` });
        expectEqual(jsonOf(contents, 'counterparty').name, 'Sarah Chen', 'the completed counterparty reads');
    });
}
