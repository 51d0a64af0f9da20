// What the person does in these tests: runs the `cortex` CLI and signs in to the inbox in
// Debian's Chromium (headless, driven by Playwright) with a `cortex inbox link`.

import { execFile } from 'node:child_process';

import { chromium } from 'playwright-core';

import { CORTEX_BIN, expectEqual } from './lib.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** Runs `cortex ARGS...`; resolves its stdout, rejects with its stderr. */
export function cli(args) {
    return new Promise((resolve, reject) => {
        execFile(CORTEX_BIN, args, { timeout: 30_000 }, (err, stdout, stderr) =>
            err ? reject(new Error(`cortex ${args.join(' ')}: ${stderr}`)) : resolve(stdout));
    });
}

/** A browser page signed in to `workspace`'s inbox; closed by the suite's cleanup. */
export async function signedInPage(s, server, dataDir, workspace) {
    const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    s.onCleanup(() => browser.close());
    const page = await (await browser.newContext()).newPage();
    const link = (await cli(['inbox', 'link', '--data', dataDir, '--workspace', workspace,
        '--base-url', server.baseUrl])).trim();
    await page.goto(link);
    expectEqual(new URL(page.url()).pathname, '/inbox/', 'landed on');
    return page;
}
