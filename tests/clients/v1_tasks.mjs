// Official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk) client against `cortex serve`
// over Streamable HTTP, in a 2025-11-25 session that takes tasks: action.communicate asked
// for a task (`task` parameter) leaves a draft waiting for approval, and the SDK's task API
// follows it: tasks/get says input_required while it waits; the agent's own token cannot
// approve it; a person approves it (`cortex inbox approve`, the CLI the person uses) and
// the task is completed, tasks/result giving the action's result. A second draft, rejected
// by the person while the SDK waits on tasks/result, ends the wait with the task cancelled.
//
//   CORTEX_BIN=/path/to/cortex node v1_tasks.mjs

import { execFile } from 'node:child_process';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

import { Suite, createToken, expectSigtermExit0, expect, expectEqual, makeDataDir, requireCortexBin, show, startServer } from './lib.mjs';
import { DRAFT_MESSAGE, SARAH, WORKSPACE, loadDemo } from './resources.mjs';

const suite = new Suite('v1_tasks', 10);

function cortex(...args) {
    return new Promise(resolve => {
        execFile(requireCortexBin(), args, { timeout: 30_000 }, (error, stdout, stderr) => {
            resolve({ code: error ? (error.code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) });
        });
    });
}

function decisionOf(task) {
    const m = /\b(dec_[0-9A-Z]{26})\b/.exec(task.statusMessage ?? '');
    expect(m, `the task names its decision: ${show(task.statusMessage)}`);
    return m[1];
}

async function draftTask(client, message) {
    const created = await client.request({
        method: 'tools/call',
        params: { name: 'action.communicate', arguments: { to: SARAH, message }, task: { ttl: 3_600_000 } }
    }, CreateTaskResultSchema);
    expect(/^task_[0-9a-f]{32}$/.test(created.task.taskId), `taskId: ${show(created.task.taskId)}`);
    expectEqual(created.task.status, 'input_required', 'status of the new task');
    return created.task;
}

await suite.run(async s => {
    const data = await makeDataDir(s, 'tasks');
    await s.check('`cortex demo` loads the demo workspace', () => loadDemo(data), { fatal: true });
    const agent = await createToken(data, WORKSPACE, 'read,act');
    const server = await startServer(s, data);
    const client = new Client({ name: 'cortex-interop-v1-tasks', version: '1.0.0' },
        { capabilities: { tasks: { requests: {} } } });
    await s.check('v1 client connects; the server offers tasks for tools/call', async () => {
        await client.connect(new StreamableHTTPClientTransport(server.mcpUrl, {
            requestInit: { headers: { Authorization: `Bearer ${agent}` } }
        }), { timeout: 15_000 });
        expect(client.getServerCapabilities()?.tasks?.requests?.tools?.call, `capabilities: ${show(client.getServerCapabilities())}`);
    }, { fatal: true });

    const task = await s.check('a draft waiting for approval is a task, input_required', () => draftTask(client, DRAFT_MESSAGE), { fatal: true });
    const decisionId = decisionOf(task);

    await s.check('tasks/get: input_required while the draft waits', async () => {
        const got = await client.experimental.tasks.getTask(task.taskId);
        expectEqual(got.status, 'input_required', 'status');
        expectEqual(got.taskId, task.taskId, 'taskId');
    });

    await s.check("the agent's token cannot approve its own draft", async () => {
        const r = await client.callTool({ name: 'action.approve', arguments: { decision_id: decisionId } });
        expect(r.isError === true, `action.approve by the agent: ${show(r)}`);
        expectEqual(r.structuredContent.error, 'unauthorized', 'error');
        expectEqual((await client.experimental.tasks.getTask(task.taskId)).status, 'input_required', 'status after the attempt');
    });

    await s.check('a person approves (cortex inbox approve): the task is completed', async () => {
        const r = await cortex('inbox', 'approve', '--data', data, '--workspace', WORKSPACE, decisionId);
        expectEqual(r.code, 0, `cortex inbox approve (stderr: ${r.stderr.trim()})`);
        const got = await client.experimental.tasks.getTask(task.taskId);
        expectEqual(got.status, 'completed', 'status');
    });

    await s.check("tasks/result: the action's result, sent", async () => {
        const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
        expect(!result.isError, `result: ${show(result)}`);
        expectEqual(result.structuredContent.status, 'success', 'status');
        expectEqual(result.structuredContent.decision_id, decisionId, 'decision_id');
        expectEqual(result.structuredContent.draft, DRAFT_MESSAGE, 'draft sent');
    });

    await s.check('tasks/result waits; a rejection ends the wait with the task cancelled', async () => {
        const second = await draftTask(client, 'And could we push the budget review a week?');
        const waiting = client.experimental.tasks.getTaskResult(second.taskId, CallToolResultSchema, { timeout: 20_000 })
            .then(r => ({ result: r }), e => ({ error: e }));
        await new Promise(resolve => setTimeout(resolve, 500));
        const r = await cortex('inbox', 'reject', '--data', data, '--workspace', WORKSPACE, decisionOf(second));
        expectEqual(r.code, 0, `cortex inbox reject (stderr: ${r.stderr.trim()})`);
        const ended = await waiting;
        expect(ended.error && /cancelled/.test(ended.error.message), `tasks/result: ${show(ended.result ?? String(ended.error))}`);
        expectEqual((await client.experimental.tasks.getTask(second.taskId)).status, 'cancelled', 'status');
    });

    await s.check('an unknown task id is not found (-32602)', async () => {
        try {
            await client.experimental.tasks.getTask('task_' + '0'.repeat(32));
        } catch (e) {
            expectEqual(e.code, -32602, 'code');
            return;
        }
        throw new Error('tasks/get of an unknown id answered');
    });

    await client.close().catch(() => {});
    await s.check('server stops', () => expectSigtermExit0(server));
});
