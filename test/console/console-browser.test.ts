import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_OPERATOR_TOKENS } from '../support/harness.js';
import { PAYER_ACCOUNT, channelDebit, initiate, sendMoneyBody } from '../support/outgoing-bodies.js';
import { balances, startHarness, type Harness } from '../support/sandbox-harness.js';
import { hubAnswer } from '../support/fake-switch.js';
import { flaggedPayments } from '../support/outgoing-rows.js';
import { SqlOutgoingStore } from '../../src/adapters/store/outgoing-store.js';
import { contradictionNote } from '../../src/domain/contradiction.js';

/**
 * The operations console end to end in a real browser: Debian's chromium driven by
 * playwright-core. An operator signs in, finds the stuck payment among the items needing
 * attention, reads its history and finishes it; the screenshots of each step are written to
 * CONSOLE_SCREENSHOT_DIR (default artifacts/console), which CI keeps.
 */
const REPOSITORY = resolve(import.meta.dirname, '../..');
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const SHOTS = resolve(process.env['CONSOLE_SCREENSHOT_DIR'] ?? join(REPOSITORY, 'artifacts', 'console'));
const consoleDir = mkdtempSync(join(tmpdir(), 'cc-console-'));

let browser: Browser | undefined;
let h: Harness | undefined;

beforeAll(async () => {
  // No silent skip: without the browser this suite fails and says how to install it.
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  await new Promise<void>((done, fail) => {
    execFile(process.execPath, [join(REPOSITORY, 'scripts', 'build-console.mjs'), '--outdir', consoleDir], { cwd: REPOSITORY }, (error, _stdout, stderr) =>
      error === null ? done() : fail(new Error(`console build failed: ${stderr}`)),
    );
  });
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
  rmSync(consoleDir, { recursive: true, force: true });
});

async function newPage(): Promise<Page> {
  if (browser === undefined) throw new Error('no browser');
  const context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  return context.newPage();
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

describe('operations console in headless Chromium', () => {
  it('an operator finds a stuck payment, reads its history and finishes it safely; the customer is refunded once', async () => {
    h = await startHarness({
      env: { CONSOLE_DIR: consoleDir, RECOVERY_ATTENTION_AFTER_ATTEMPTS: '2' },
    });
    const harness = h;
    // A payment whose accept hung: CONFIRMING. The recovery worker asks the switch, which does not
    // answer, so the payment is flagged. Then the switch's own record shows ABORTED.
    const body = sendMoneyBody();
    const home = String(body['homeTransactionId']);
    harness.fakeSwitch.script(home, { accept: 'hang', stateAfterAccept: 'WAITING_FOR_QUOTE_ACCEPTANCE' });
    const terms = await initiate(harness, body);
    await channelDebit(harness, home, '100');
    const transferId = String(terms['transferId']);
    expect((await harness.callOutgoing('PUT', `/send-money/${transferId}`, { acceptQuote: true })).status).toBe(504);
    harness.fakeSwitch.setTransferStatus(transferId, { status: 503, body: { statusCode: '2003', message: 'down' } });
    harness.clock.advance(1_001);
    await harness.app.outgoingRecovery.runOnce();
    expect((await harness.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING', needsAttention: true });
    harness.fakeSwitch.setTransferStatus(transferId, hubAnswer(transferId, 'ABORTED'));
    const before = await balances(harness);

    const page = await newPage();
    const failedRequests: string[] = [];
    page.on('requestfailed', (request) => failedRequests.push(request.url()));
    page.on('request', (request) => {
      if (!request.url().startsWith(harness.operationsUrl)) failedRequests.push(`outside: ${request.url()}`);
    });
    await page.goto(`${harness.operationsUrl}/console/`);
    await expect.poll(() => page.title()).toBe('Core connector operations');

    // Every form control has a label; nothing overflows a laptop screen.
    const unlabelled = await page.$$eval('input, select, textarea', (controls) =>
      controls.filter((control) => (control as HTMLInputElement).labels?.length === 0 && control.getAttribute('aria-label') === null).map((control) => control.id),
    );
    expect(unlabelled).toEqual([]);

    // Sign in with the keyboard only: the token field has the focus.
    await page.keyboard.type('wrong-token-that-is-long-enough-0000');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#problem').textContent()).toBe('Unauthorized: missing or wrong operator token (Authorization: Bearer ...)');
    await page.getByLabel('Operator token').fill(TEST_OPERATOR_TOKENS.alice);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#signed-in').textContent()).toBe('Signed in as alice');
    await expect.poll(() => page.locator('#glance').textContent()).toContain('CONFIRMING1');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1366);
    await shot(page, '1-signed-in');

    // Find the items needing attention.
    await page.getByLabel('Needs attention only').check();
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('#results-caption').textContent()).toBe('1 found');
    const row = page.locator('#results tbody tr');
    expect(await row.locator('td').allTextContents()).toEqual(['Outgoing', home, 'CONFIRMING', '100 ZMW', 'Yes', '2026-11-23 10:00:00', 'Open']);
    await shot(page, '2-needing-attention');

    // Open it from the keyboard and read its history.
    await page.getByRole('button', { name: `Open outgoing payment ${home}` }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#detail-title').textContent()).toBe(`Outgoing payment ${home}: CONFIRMING`);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('detail-title');
    const history = await page.locator('#history tbody tr').evaluateAll((rows) => rows.map((tr) => [...tr.querySelectorAll('td')].slice(2, 5).map((td) => td.textContent)));
    expect(history).toEqual([
      ['created in INITIATING', 'request', '0'],
      ['INITIATING (attempt)', 'request', '0'],
      ['INITIATING → QUOTED', 'request', '0'],
      ['QUOTED → ACCEPTING', 'request', '0'],
      ['ACCEPTING → CONFIRMING', 'request', '0'],
      ['CONFIRMING (attempt)', 'request', '1'],
      ['CONFIRMING (attempt)', 'recovery', '2'],
    ]);
    await shot(page, '3-detail-and-history');

    // Resolving it by hand offers the hub's two outcomes; the abort's review says the customer is refunded.
    await page.getByLabel('Resolve by hand (the institution, or the hub, confirmed it out of band)').check();
    expect(await page.locator('#action-outcome option').allTextContents()).toEqual(['COMPLETED', 'ABORTED']);
    await page.getByLabel('Outcome', { exact: true }).selectOption('ABORTED');
    await page.getByLabel('Reason (recorded in the audit trail)').fill('hub operator confirms the abort');
    await page.getByLabel('Evidence (what the institution or the hub confirmed, and its reference)').fill('hub ticket 881');
    await page.getByRole('button', { name: 'Review action…' }).click();
    await expect.poll(() => page.locator('#confirm-text').textContent()).toBe(`Record that the hub aborted outgoing payment ${home} (now CONFIRMING), on the hub's word: the connector refunds the customer once through the institution. It is recorded with your name, reason and evidence.`);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.locator('#status').textContent()).toBe('Action cancelled; nothing changed.');
    await page.getByLabel('Evidence (what the institution or the hub confirmed, and its reference)').fill('');

    // Apply the switch's outcome; cancelling first changes nothing.
    await page.getByLabel("Apply the outcome the switch reports").check();
    await page.getByLabel('Outcome', { exact: true }).selectOption('ABORTED');
    await page.getByLabel('Reason (recorded in the audit trail)').fill('hub finance portal shows the transfer aborted');
    await page.getByRole('button', { name: 'Review action…' }).click();
    await expect.poll(() => page.locator('#confirm-text').textContent()).toBe(`Ask the switch for outgoing payment ${home} (now CONFIRMING) and apply its outcome only if it reports ABORTED: the customer is refunded once.`);
    await shot(page, '4-confirmation');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.locator('#status').textContent()).toBe('Action cancelled; nothing changed.');
    expect((await harness.callOutgoing('GET', `/send-money/${transferId}`)).body).toMatchObject({ state: 'CONFIRMING' });

    await page.getByRole('button', { name: 'Review action…' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => page.locator('#detail-title').textContent()).toBe(`Outgoing payment ${home}: REFUNDED`);
    const after = await page.locator('#history tbody tr').evaluateAll((rows) => rows.slice(-2).map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(after.map((cells) => [cells[2], cells[3], cells[7]])).toEqual([
      ['CONFIRMING → REFUNDING', 'operator: alice', 'apply-switch-outcome: hub finance portal shows the transfer aborted'],
      ['REFUNDING → REFUNDED', 'operator: alice', 'apply-switch-outcome: hub finance portal shows the transfer aborted'],
    ]);
    await expect.poll(() => page.locator('#status').textContent()).toBe(`Done: Outgoing payment ${home}: REFUNDED`);
    // The list of items needing attention was searched again: the payment left it.
    expect(await page.locator('#results-caption').textContent()).toBe('0 found');
    await shot(page, '5-finished');

    // The same action again is refused by the server and said on the page; no second refund.
    await page.getByLabel('Reason (recorded in the audit trail)').fill('again');
    await page.getByRole('button', { name: 'Review action…' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => page.locator('#problem').textContent()).toBe("Operator action refused: the payment is REFUNDED; only ACCEPTING or CONFIRMING waits for the switch's outcome");
    const refunded = await balances(harness);
    expect(refunded.of(PAYER_ACCOUNT).balance).toBe('1200.5');
    expect(before.of(PAYER_ACCOUNT).balance).toBe('1100.5');

    // The day's reconciliation from the console: the channel's debit and the refund match.
    await page.getByLabel('Day (UTC)').fill('2026-11-23');
    await page.getByRole('button', { name: 'Reconcile' }).click();
    await expect.poll(() => page.locator('#status').textContent()).toBe('Reconciled 2026-11-23: 0 line(s) need a look.');
    await shot(page, '6-reconciliation');

    // A search that more than 200 items match shows the first 200 and says so.
    await flaggedPayments(harness.app.database, 0, 201);
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('#results-caption').textContent()).toBe('200 found (the first 200; narrow the search)');
    expect(await page.locator('#results tbody tr').count()).toBe(200);
    expect(failedRequests).toEqual([]);
  }, 60_000);

  it('offers COMPLETED for a refund held back because the switch reported the transfer completed, and only for it', async () => {
    const harness = await startHarness({ env: { CONSOLE_DIR: consoleDir } });
    try {
      const store = new SqlOutgoingStore(harness.app.database, () => harness.clock.now());
      const refunding = async (changes: { lastError: string; switchState: string }): Promise<string> => {
        const body = sendMoneyBody();
        const home = String(body['homeTransactionId']);
        await initiate(harness, body);
        await channelDebit(harness, home, '100');
        expect(await store.transition(home, ['QUOTED'], 'ACCEPTING')).toMatchObject({ state: 'ACCEPTING' });
        expect(await store.transition(home, ['ACCEPTING'], 'REFUNDING', { needsAttention: true, ...changes })).toMatchObject({ state: 'REFUNDING' });
        return home;
      };
      const held = await refunding({ lastError: contradictionNote('COMPLETED', 'payment', 'REFUNDING'), switchState: 'COMPLETED' });
      const refused = await refunding({ lastError: 'the institution refused the refund', switchState: 'ABORTED' });

      const page = await newPage();
      await page.goto(`${harness.operationsUrl}/console/`);
      await page.getByLabel('Operator token').fill(TEST_OPERATOR_TOKENS.alice);
      await page.keyboard.press('Enter');
      await expect.poll(() => page.locator('#signed-in').textContent()).toBe('Signed in as alice');
      await page.getByLabel('Needs attention only').check();
      await page.getByRole('button', { name: 'Search' }).click();
      await expect.poll(() => page.locator('#results-caption').textContent()).toBe('2 found');

      const resolveOptions = async (home: string): Promise<string[]> => {
        await page.getByRole('button', { name: `Open outgoing payment ${home}` }).click();
        await expect.poll(() => page.locator('#detail-title').textContent()).toBe(`Outgoing payment ${home}: REFUNDING`);
        await page.getByLabel('Resolve by hand (the institution, or the hub, confirmed it out of band)').check();
        return page.locator('#action-outcome option').allTextContents();
      };
      expect(await resolveOptions(refused)).toEqual(['REFUNDED']);
      expect(await resolveOptions(held)).toEqual(['COMPLETED', 'REFUNDED']);
      await page.getByLabel('Outcome', { exact: true }).selectOption('COMPLETED');
      await page.getByLabel('Reason (recorded in the audit trail)').fill('the hub completed it');
      await page.getByLabel('Evidence (what the institution or the hub confirmed, and its reference)').fill('no refund in the journal, ticket 42');
      await page.getByRole('button', { name: 'Review action…' }).click();
      await expect.poll(() => page.locator('#confirm-text').textContent()).toBe(
        `Record outgoing payment ${held} (now REFUNDING) as COMPLETED: the switch reported the transfer completed, so the customer is not refunded (the institution shows no refund under its reference). The connector moves no money; it is recorded with your name, reason and evidence.`,
      );
      await page.getByRole('button', { name: 'Confirm' }).click();
      await expect.poll(() => page.locator('#detail-title').textContent()).toBe(`Outgoing payment ${held}: COMPLETED`);
      expect((await balances(harness)).of(PAYER_ACCOUNT).balance).toBe('1000.5');
      await shot(page, '7-held-refund-resolved');
    } finally {
      await harness.close();
    }
  }, 60_000);
});
