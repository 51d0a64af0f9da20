// The web inbox (/inbox/) in a real browser: Debian's Chromium driven by playwright-core,
// against the real `cortex serve` on the demo workspace. The agent proposes drafts over
// MCP with its read,act token; the person signs in through `cortex inbox link` and acts in
// the page. Each check asserts what a person would see (or what the agent then sees).
//
//   CORTEX_BIN=build/cortex tests/browser/run.sh
//
// Screenshots (1280 px and 390 px wide) and the server logs go to tests/browser/artifacts/.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

import {
    ARTIFACTS, agentSeesDecision, callTool, cli, deliveredMessages, eventually, launchBrowser, makeWorkspace,
    newContext, propose, signInLink, startServer, WORKSPACE,
} from './lib.mjs';

const SARAH = 'sarah.chen@northwind.example';
const PRIYA = 'priya.shah@harborline.example';
const DANA = 'dana.okafor@northwind.example';
const JORDAN = 'jordan.kim@northwind.example';
const TIMEOUT = { timeout: 90_000 };
const UI_WAIT = 10_000; // live updates and results must show within this

let ws;
let server;
let browser;

before(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    ws = await makeWorkspace();
    server = await startServer(ws);
    browser = await launchBrowser();
});

after(async () => {
    await browser?.close();
    await server?.stop();
    await ws?.remove();
});

/** A new context signed in through a fresh link; the page is on /inbox/ with state shown. */
async function signedIn(t, opts = {}) {
    const { context, problems } = await newContext(browser, opts);
    t.after(async () => {
        await context.close();
    });
    const page = await context.newPage();
    await page.goto(await signInLink(ws, server));
    await page.getByRole('heading', { name: 'Pending approvals' }).waitFor({ timeout: UI_WAIT });
    if (opts.live !== false) await page.getByText('Live', { exact: true }).waitFor({ timeout: UI_WAIT }); // the event stream is open
    // Nothing the page did may break (uncaught errors, CSP violations): checked at the end.
    t.after(() => assert.deepEqual(problems, [], 'the page had errors'));
    return { context, page, problems };
}

/** The card of one pending draft: located by its decision id, checked by what it shows. */
const card = (page, decisionId) => page.locator(`#pending article[data-decision-id="${decisionId}"]`);

/** Waits for the card of a draft the agent just proposed: it must come by a live update. */
async function appears(page, decisionId) {
    const item = card(page, decisionId);
    try {
        await item.waitFor({ timeout: UI_WAIT });
    } catch (e) {
        throw new Error(`the draft ${decisionId} the agent proposed did not appear in Pending within ${UI_WAIT / 1000} s ` +
            `without a reload (no live update from /inbox/api/events?)`, { cause: e });
    }
    return item;
}

/** The text of an element, or '' if it is not there (yet): for polling with eventually(). */
const textOf = (locator) => locator.innerText({ timeout: 500 }).catch(() => '');

/** Waits until the live region (role=status) says something matching `re`; returns it. */
async function statusSays(page, re) {
    const status = page.getByRole('status');
    await eventually(async () => re.test(await textOf(status)), { ms: UI_WAIT });
    const said = await textOf(status);
    assert.match(said, re, 'the status message');
    return said;
}

/** The state the page itself reads (same origin, the session cookie). */
const pageState = (page) => page.evaluate(async () => (await fetch('/inbox/api/state', { cache: 'no-store' })).json());

test('a fresh sign-in link lands on /inbox/ with no secret in the address', TIMEOUT, async (t) => {
    const { context, problems } = await newContext(browser);
    t.after(() => context.close());
    const page = await context.newPage();
    const link = await signInLink(ws, server);
    assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/inbox\/signin\?t=\S+$/);

    const response = await page.goto(link);
    const url = new URL(page.url());
    assert.equal(url.pathname, '/inbox/');
    assert.equal(url.search, '', 'no query string left in the address bar');
    assert.ok(!page.url().includes(new URL(link).searchParams.get('t')), 'the link secret is gone from the URL');
    const hop = response.request().redirectedFrom();
    assert.ok(hop, 'the sign-in link redirected');
    assert.equal((await hop.response()).status(), 303);
    assert.match(response.headers()['content-security-policy'] || '', /default-src 'self'/, 'the page is served with a strict CSP');

    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor({ timeout: UI_WAIT });
    await page.getByText(`Workspace ${WORKSPACE}`).waitFor();
    for (const name of ['Pending approvals', 'Notifications', 'Recent decisions', 'People', 'Rules in force']) {
        assert.equal(await page.getByRole('heading', { name, level: 2 }).count(), 1, `section "${name}"`);
    }
    // The demo's people and rules are on the page.
    await page.getByLabel('Trust level for Sarah Chen').waitFor();
    const state = await pageState(page);
    assert.ok(state.rules.length > 0, 'the demo has rules');
    await page.locator('#rules').getByText(state.rules[0].summary).waitFor();

    const cookies = await context.cookies();
    assert.equal(cookies.length, 1, `one session cookie, got ${JSON.stringify(cookies)}`);
    assert.equal(cookies[0].httpOnly, true, 'the session cookie is HttpOnly');
    assert.equal(cookies[0].sameSite, 'Strict', 'the session cookie is SameSite=Strict');
    assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read the session cookie');
    assert.deepEqual(problems, []);
});

test('a replayed sign-in link is refused', TIMEOUT, async (t) => {
    const link = await signInLink(ws, server);
    const first = await newContext(browser);
    const second = await newContext(browser);
    t.after(() => Promise.all([first.context.close(), second.context.close()]));

    const a = await first.context.newPage();
    await a.goto(link);
    assert.equal(new URL(a.url()).pathname, '/inbox/', 'the first use signs in');

    const b = await second.context.newPage();
    const replay = await b.goto(link);
    assert.equal(replay.status(), 401, 'the second use is refused');
    assert.match(await b.locator('body').innerText(), /expired|already used/i, 'the refusal says why, in words');
    assert.deepEqual(await second.context.cookies(), [], 'no session for the replay');

    // Without a session the inbox says so, and how to get a new link.
    await b.goto(new URL('/inbox/', link).href);
    await b.getByRole('heading', { name: 'Signed out' }).waitFor({ timeout: UI_WAIT });
    await b.getByText('cortex inbox link').waitFor();
    assert.equal(await b.getByRole('heading', { name: 'Pending approvals' }).isVisible(), false);
    assert.deepEqual([...first.problems, ...second.problems], []);
});

test('an expired sign-in link is refused (server clock 16 minutes after the link)', TIMEOUT, async (t) => {
    // A second workspace and server whose clock is frozen (CORTEX_FAKE_NOW); links are made
    // by the CLI with its own frozen clock, 16 and 14 minutes earlier.
    const NOW = '2026-06-09T14:00:00Z';
    const at = (min) => ({ CORTEX_FAKE_NOW: new Date(Date.parse(NOW) - min * 60_000).toISOString() });
    const ws2 = await makeWorkspace({ env: at(0) });
    const server2 = await startServer(ws2, { env: at(0), logName: 'server-fake-clock' });
    const { context, problems } = await newContext(browser);
    t.after(async () => {
        await context.close();
        await server2.stop();
        await ws2.remove();
    });
    const page = await context.newPage();

    const stale = await signInLink(ws2, server2, { env: at(16) });
    const refused = await page.goto(stale);
    assert.equal(refused.status(), 401, 'a 16-minute-old link is refused');
    assert.match(await page.locator('body').innerText(), /expired|already used/i);
    assert.deepEqual(await context.cookies(), []);

    // Control: a 14-minute-old link still works, so the refusal above was about age.
    const fresh = await signInLink(ws2, server2, { env: at(14) });
    await page.goto(fresh);
    assert.equal(new URL(page.url()).pathname, '/inbox/');
    await page.getByRole('heading', { name: 'Pending approvals' }).waitFor({ timeout: UI_WAIT });
    assert.deepEqual(problems, []);
});

test('a draft the agent proposes appears live; edited and approved, it is delivered as edited', TIMEOUT, async (t) => {
    const { page } = await signedIn(t);
    await page.evaluate(() => { window.__sameDocument = true; });

    const original = `Thanks, the deck is attached. (${Date.now()})`;
    const proposed = await propose(server, ws.token, SARAH, original);
    const item = await appears(page, proposed.decision_id); // no reload: Server-Sent Events
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was not reloaded');

    // What the person sees: recipient, the full draft, trust level, why.
    await item.getByRole('heading', { name: 'Draft to Sarah Chen' }).waitFor();
    await item.getByText(SARAH, { exact: true }).waitFor();
    const box = item.getByLabel('Message to Sarah Chen');
    assert.equal(await box.evaluate((el) => el.tagName), 'TEXTAREA');
    assert.equal(await box.inputValue(), proposed.draft ?? original, 'the full draft, editable');
    await item.getByText('Trust level: 1 · Draft').waitFor();
    const pending = (await pageState(page)).pending.find((p) => p.decision_id === proposed.decision_id);
    assert.ok(pending, 'the state lists the draft');
    await item.getByText(pending.why.summary).waitFor();
    // ... and the trust that held it, in words.
    assert.match(pending.why.level_reason, /^Held for your approval: trust for communicate with Sarah Chen is level 1 \(draft/);
    if (pending.why.level_reason !== pending.why.summary) await item.getByText(pending.why.level_reason).waitFor();
    await item.getByText(/Confidence: (Just guessing|Pretty sure|Strong pattern)/).waitFor();
    for (const ep of pending.why.contributing_episodes) await item.getByText(ep.summary).waitFor();

    // Edit, then approve by the button's accessible name.
    const edited = `Hi Sarah, the deck is attached; slides 4 and 7 have the new numbers. (${Date.now()})`;
    await box.fill(edited);
    await item.getByText('Edited: your text will be sent.').waitFor();
    assert.ok(await page.getByRole('button', { name: /Approve/ }).count() >= 1);
    const answer = page.waitForResponse((r) => r.url().endsWith('/inbox/api/approve'));
    await item.getByRole('button', { name: 'Approve draft to Sarah Chen' }).click();
    const body = await (await answer).json();
    assert.equal((await answer).status(), 200, JSON.stringify(body));

    // At once: the draft leaves Pending and the result is announced.
    await item.waitFor({ state: 'detached', timeout: UI_WAIT });
    const said = await statusSays(page, /Approved with your edits: the draft to Sarah Chen/);
    assert.ok(said.includes(body.message), `the status shows the server's words: ${said}`);

    // The agent sees it executed, then delivered; the outbox got the edited text.
    const seen = await eventually(async () => {
        const d = await agentSeesDecision(server, ws.token, proposed.decision_id);
        return d && d.status === 'delivered' ? d : null;
    });
    assert.ok(seen, `decision.list shows the decision delivered: ${JSON.stringify(await agentSeesDecision(server, ws.token, proposed.decision_id))}`);
    const sent = (await deliveredMessages(ws)).filter((m) => m.to === SARAH && m.body === edited);
    assert.equal(sent.length, 1, 'the edited text was delivered once');
    assert.equal((await deliveredMessages(ws)).filter((m) => m.body === original).length, 0, 'the original text was not sent');

    // And the page's Recent decisions says so too, live.
    const row = page.locator(`#decisions [data-decision-id="${proposed.decision_id}"]`);
    await eventually(async () => /Delivered/.test(await textOf(row)), { ms: UI_WAIT });
    assert.match(await textOf(row), /Delivered/);
    assert.equal(await row.isVisible(), true, 'the decision is among those shown');
});

test('a draft rejected with a reason leaves Pending and is never sent', TIMEOUT, async (t) => {
    const { page } = await signedIn(t);
    const proposed = await propose(server, ws.token, PRIYA, `Confirming Thursday 9:00 for the go-live. (${Date.now()})`);
    const item = await appears(page, proposed.decision_id);

    const reason = item.getByLabel('Reason for rejecting the draft to Priya Shah (optional)');
    assert.equal(await reason.evaluate((el) => el.tagName), 'INPUT');
    await reason.fill('Wrong date; I will call her instead.');
    assert.ok(await page.getByRole('button', { name: /Reject/ }).count() >= 1);
    await item.getByRole('button', { name: 'Reject draft to Priya Shah' }).click();

    await item.waitFor({ state: 'detached', timeout: UI_WAIT });
    await statusSays(page, /Rejected: the draft to Priya Shah/);

    const seen = await eventually(async () => {
        const d = await agentSeesDecision(server, ws.token, proposed.decision_id);
        return d && d.status === 'rejected' ? d : null;
    });
    assert.ok(seen, 'decision.list shows the decision rejected');
    const row = page.locator(`#decisions [data-decision-id="${proposed.decision_id}"]`);
    await eventually(async () => /Rejected/.test(await textOf(row)), { ms: UI_WAIT });
    assert.match(await textOf(row), /Rejected/);
    assert.equal(await row.isVisible(), true, 'the decision is among those shown');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await deliveredMessages(ws)).filter((m) => m.action_id === proposed.action_id).length, 0, 'nothing delivered');
});

test("a person's trust level changed in the page sticks, and the agent's next draft follows it", TIMEOUT, async (t) => {
    const { page } = await signedIn(t);
    const select = page.getByLabel('Trust level for Jordan Kim');
    assert.equal(await select.evaluate((el) => el.tagName), 'SELECT');
    assert.equal(await select.inputValue(), '1', 'Jordan starts at the built-in default, 1');
    const save = page.getByRole('button', { name: 'Save trust level for Jordan Kim' });
    assert.equal(await save.isDisabled(), true, 'nothing to save yet');

    await select.selectOption('2');
    const answer = page.waitForResponse((r) => r.url().endsWith('/inbox/api/trust'));
    await save.click();
    const body = await (await answer).json();
    assert.equal((await answer).status(), 200, JSON.stringify(body));
    assert.equal(body.trust_level, 2);
    const said = await statusSays(page, /\S/);
    assert.ok(said.includes(body.message), `the status shows the server's words: ${said}`);

    await page.reload();
    await page.getByRole('heading', { name: 'Pending approvals' }).waitFor({ timeout: UI_WAIT });
    assert.equal(await page.getByLabel('Trust level for Jordan Kim').inputValue(), '2', 'the level stuck after a reload');
    await page.locator('#people li', { hasText: 'Jordan Kim' }).getByText('Set for this person').waitFor();
    await page.getByText('Live', { exact: true }).waitFor();

    // The agent's next draft to Jordan is held at level 2: it sends by itself unless rejected.
    const proposed = await propose(server, ws.token, JORDAN, `Running 10 minutes late. (${Date.now()})`);
    const item = await appears(page, proposed.decision_id);
    await item.getByText('Trust level: 2 · Supervised').waitFor();
    await item.getByText(/Sends by itself .* unless you reject it/).waitFor();
});

test('a rule Cortex learned from the demo history is proposed in the page; accepted there, it is in force', TIMEOUT, async (t) => {
    const { page } = await signedIn(t);
    // (Marcus on Tuesdays is found too, but not proposed: the demo's own rule does it.)
    const name = 'learned-slow-riley-summers';
    const row = page.locator('#rules li', { hasText: 'Put Riley Summers in the daily digest' });
    await row.waitFor({ timeout: UI_WAIT });
    assert.equal(await row.getAttribute('data-status'), 'proposed');
    await row.locator('.chip', { hasText: 'Proposed' }).waitFor();
    const answer = page.waitForResponse((r) => r.url().endsWith('/inbox/api/rule'));
    await page.getByRole('button', { name: `Accept rule ${name}` }).click();
    const body = await (await answer).json();
    assert.equal((await answer).status(), 200, JSON.stringify(body));
    assert.equal(body.status, 'active');
    await statusSays(page, /Accepted: Put Riley Summers in the daily digest/);
    await eventually(async () => (await row.getAttribute('data-status').catch(() => '')) === 'active', { ms: UI_WAIT });
    assert.equal(await page.getByRole('button', { name: `Accept rule ${name}` }).count(), 0, 'no Accept on a rule in force');
    // The agent sees it in force.
    const listed = await callTool(server, ws.token, 'rule.list', { status: 'active', origin: 'learned' });
    assert.deepEqual(listed.structuredContent.rules.map((r) => r.name), [name]);
});

test('a state-changing request without the CSRF token is refused with 403', TIMEOUT, async (t) => {
    const { page } = await signedIn(t);
    const proposed = await propose(server, ws.token, DANA, `I will put time on your calendar. (${Date.now()})`);
    await appears(page, proposed.decision_id);

    const post = (path, body, headers = {}) => page.evaluate(async ([path, body, headers]) => {
        const r = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
        let json = null;
        try {
            json = await r.json();
        } catch {}
        return { status: r.status, json };
    }, [path, body, headers]);

    const bare = await post('/inbox/api/approve', { decision_id: proposed.decision_id });
    assert.equal(bare.status, 403, `approve without the token: ${JSON.stringify(bare)}`);
    assert.equal(bare.json?.error, 'csrf');
    const wrong = await post('/inbox/api/approve', { decision_id: proposed.decision_id }, { 'X-CSRF-Token': 'not-the-token' });
    assert.equal(wrong.status, 403, `approve with a wrong token: ${JSON.stringify(wrong)}`);
    const state = await pageState(page);
    const dana = state.people.find((p) => p.name === 'Dana Okafor');
    const trust = await post('/inbox/api/trust', { entity_id: dana.entity_id, level: 0 });
    assert.equal(trust.status, 403, `trust without the token: ${JSON.stringify(trust)}`);

    // Nothing happened: still pending for the agent and on the page; Dana's level unchanged.
    assert.equal((await agentSeesDecision(server, ws.token, proposed.decision_id))?.status, 'pending');
    const after = await pageState(page);
    assert.ok(after.pending.some((p) => p.decision_id === proposed.decision_id), 'the draft is still pending');
    assert.equal(after.people.find((p) => p.entity_id === dana.entity_id).trust_level, dana.trust_level);

    // Control: the same trust request with the session's token is accepted.
    const ok = await post('/inbox/api/trust', { entity_id: dana.entity_id, level: dana.trust_level }, { 'X-CSRF-Token': state.csrf_token });
    assert.equal(ok.status, 200, `with the token: ${JSON.stringify(ok)}`);
});

test('by keyboard alone: a skip link, a logical order, visible focus, approve with Enter', TIMEOUT, async (t) => {
    const { page } = await signedIn(t);
    const proposed = await propose(server, ws.token, DANA, `Booked for Friday 10:00. (${Date.now()})`);
    const item = await appears(page, proposed.decision_id);

    const focused = () => page.evaluate(() => {
        const el = document.activeElement;
        const style = getComputedStyle(el);
        return {
            tag: el.tagName, id: el.id, text: (el.textContent || '').trim().replace(/\s+/g, ' '),
            decision: el.closest('[data-decision-id]')?.getAttribute('data-decision-id') || null,
            outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
        };
    });
    await page.keyboard.press('Tab'); // from the top of a freshly loaded page
    const first = await focused();
    assert.equal(first.text, 'Skip to pending approvals', 'the first stop is the skip link');
    assert.equal(first.outline, true, 'focus is visible');

    const seen = [];
    let target = null;
    for (let i = 0; i < 120 && !target; i++) {
        await page.keyboard.press('Tab');
        const f = await focused();
        seen.push(f);
        if (f.tag === 'BUTTON' && f.text === 'Approve draft to Dana Okafor' && f.decision === proposed.decision_id) target = f;
    }
    assert.ok(target, `Tab reaches the Approve button; went through ${seen.map((f) => f.text || f.tag).join(' | ')}`);
    assert.equal(target.outline, true, 'the focused Approve button shows a visible outline');
    const order = seen.map((f) => (f.decision === proposed.decision_id ? f.tag : null)).filter(Boolean);
    assert.ok(order.indexOf('TEXTAREA') >= 0 && order.indexOf('TEXTAREA') < order.indexOf('BUTTON'), 'the draft comes before its buttons');
    assert.ok(seen.findIndex((f) => f.text === 'Sign out') < seen.findIndex((f) => f.decision), 'the header comes before the drafts');

    await page.keyboard.press('Enter');
    await item.waitFor({ state: 'detached', timeout: UI_WAIT });
    await statusSays(page, /Approved: the draft to Dana Okafor/);
    const after = await focused();
    assert.notEqual(after.tag, 'BODY', 'focus moved somewhere sensible, not lost');
    const d = await eventually(async () => {
        const x = await agentSeesDecision(server, ws.token, proposed.decision_id);
        return x && ['executed', 'delivered'].includes(x.status) ? x : null;
    });
    assert.ok(d, 'the agent sees it executed or delivered');
});

test('an error from the server is shown in words on the draft', TIMEOUT, async (t) => {
    // The page misses a change (its live updates are cut off), so it still shows a draft
    // that was rejected elsewhere; approving it gets the server's refusal, shown in words.
    const { context, problems } = await newContext(browser);
    t.after(async () => {
        await context.close();
    });
    await context.route('**/inbox/api/events', (route) => route.abort());
    const page = await context.newPage();
    await page.goto(await signInLink(ws, server));
    const proposed = await propose(server, ws.token, SARAH, `Could we move our 1:1? (${Date.now()})`);
    await page.reload();
    const item = card(page, proposed.decision_id);
    await item.waitFor({ timeout: UI_WAIT });

    const person = (await cli(['token', 'create', '--data', ws.dir, '--workspace', WORKSPACE, '--scopes', 'read,act,approve',
        '--label', 'browser tests: the person elsewhere'])).trim();
    const rejected = await callTool(server, person, 'action.reject', { decision_id: proposed.decision_id, reason: 'handled by phone' });
    assert.notEqual(rejected.isError, true, `action.reject with an approve token: ${JSON.stringify(rejected)}`);

    const answer = page.waitForResponse((r) => r.url().endsWith('/inbox/api/approve'));
    await item.getByRole('button', { name: 'Approve draft to Sarah Chen' }).click();
    const refusal = await answer;
    assert.ok(refusal.status() >= 400 && refusal.status() < 500, `approve after a reject: HTTP ${refusal.status()}`);
    const { message } = await refusal.json();
    // The server's words, on the page; the draft, no longer pending, leaves the list.
    const said = await statusSays(page, /Could not approve the draft to Sarah Chen: /);
    assert.ok(said.includes(message), `the status shows the server's message "${message}": ${said}`);
    assert.match(said, /not pending|rejected/i);
    await item.waitFor({ state: 'detached', timeout: UI_WAIT });
    assert.deepEqual(problems, []);
});

test('desktop and phone layouts: screenshots, no sideways scrolling at 390 px', TIMEOUT, async (t) => {
    // Something in each section: a warm draft with its evidence, and an urgent-looking one.
    await propose(server, ws.token, SARAH, 'Thanks, the deck is attached. I added the revised numbers on slides 4 and 7; the rest is unchanged from Monday.', { tone: 'warm' });
    await propose(server, ws.token, 'elena@parkadvisory.example', 'Happy to walk you through the Q3 plan before the board meeting. Would Thursday at 16:00 work?');
    for (const [width, height, name] of [[1280, 900, 'inbox-1280'], [390, 844, 'inbox-390']]) {
        const { page } = await signedIn(t, { width, height });
        await page.getByRole('heading', { name: 'Draft to Elena Park' }).waitFor({ timeout: UI_WAIT });
        await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
        await page.screenshot({ path: join(ARTIFACTS, `${name}-top.png`) });
        const widths = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
        assert.ok(widths.scroll <= widths.client, `${name}: the page scrolls sideways (${widths.scroll} > ${widths.client})`);
        // Every Approve and Reject button is on screen horizontally.
        for (const button of await page.getByRole('button', { name: /^(Approve|Reject) / }).all()) {
            const b = await button.boundingBox();
            assert.ok(b && b.x >= 0 && b.x + b.width <= width, `${name}: a button is cut off: ${JSON.stringify(b)}`);
        }
    }
    // The signed-out page, at phone width.
    const { page } = await signedIn(t, { width: 390, height: 844 });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Signed out' }).waitFor({ timeout: UI_WAIT });
    await page.screenshot({ path: join(ARTIFACTS, 'signed-out-390.png') });
});

test('signing out ends the session: the page says so, and the API refuses it', TIMEOUT, async (t) => {
    const { page } = await signedIn(t);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Signed out' }).waitFor({ timeout: UI_WAIT });
    await page.getByText('cortex inbox link').waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Pending approvals' }).isVisible(), false);
    const status = await page.evaluate(async () => (await fetch('/inbox/api/state')).status);
    assert.equal(status, 401, 'the session is gone on the server');
    await page.reload();
    await page.getByRole('heading', { name: 'Signed out' }).waitFor({ timeout: UI_WAIT });
});
