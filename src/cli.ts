#!/usr/bin/env node
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { extname } from 'node:path';
import { config as loadDotenv } from 'dotenv';
import { request } from 'undici';
import { readReport, reportCsv } from './aggregate/reconciliation.js';
import { nextPollDelayMs } from './identifiers/progress-polling.js';
import { applyRuntimeFlags } from './runtime-flags.js';

/**
 * The connector's command line (npx mojaloop-core-connector ...):
 *
 *   identifiers register FILE [--report REPORT.csv] [--url http://127.0.0.1:3004]
 *   identifiers opt-out  FILE [--report REPORT.csv] [--url ...]
 *
 * FILE is CSV (header idType,idValue,idSubValue,consentBy,consentAt,consentChannel) or JSON
 * lines (.jsonl, .ndjson). The file goes to the running connector's outgoing server as a bulk
 * job (with OUTGOING_API_KEY, from the environment or .env); the command shows its progress,
 * prints a summary and writes every line's result to the report file. Running it again on the
 * same file is the same job while that job is unfinished, a new run of it once it is DONE: what is
 * registered is not sent again. Exits 0 when every line's identifier ended as asked (REGISTERED,
 * or DEREGISTERED for an opt-out), 3 otherwise, 1 when the connector refused.
 *
 *   reconcile --date YYYY-MM-DD | --from INSTANT --to INSTANT [--format csv|json] [--out FILE] [--url http://127.0.0.1:3005]
 *
 * Asks the running connector's operations server (with OPERATOR_TOKEN, from the environment or
 * .env) to compare its records of that UTC day with the institution's transactions, prints the
 * counts per category and writes the report (CSV by default), both from the one report it asks
 * for. Exits 0 when every line matched (or is still pending), 3 when discrepancies were found, 1
 * (writing nothing) when the connector refused or answered something that is no report.
 */

const USAGE =
  'usage: mojaloop-core-connector identifiers register|opt-out FILE [--report REPORT.csv] [--url http://127.0.0.1:3004]\n' +
  '       mojaloop-core-connector identifiers reconcile [--fix] [--url http://127.0.0.1:3004]\n' +
  '       mojaloop-core-connector reconcile --date YYYY-MM-DD | --from INSTANT --to INSTANT [--format csv|json] [--out FILE] [--url http://127.0.0.1:3005]';

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? args[index + 1] : undefined;
}

function bar(done: number, total: number): string {
  const width = 30;
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${total === 0 ? 100 : Math.floor((done / total) * 100)}% ${done}/${total}`;
}

async function main(args: string[]): Promise<number> {
  applyRuntimeFlags();
  if (existsSync('.env')) loadDotenv({ path: '.env', quiet: true });
  const [group, action, file] = args;
  if (group === 'reconcile') return reconcilePaymentsCommand(args);
  const reconcile = group === 'identifiers' && action === 'reconcile';
  if (!reconcile && (group !== 'identifiers' || (action !== 'register' && action !== 'opt-out') || file === undefined)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const apiKey = process.env['OUTGOING_API_KEY'];
  if (apiKey === undefined || apiKey === '') {
    process.stderr.write('OUTGOING_API_KEY: set it (environment or .env) to the outgoing server\'s channel key\n');
    return 2;
  }
  const base = (option(args, 'url') ?? `http://127.0.0.1:${process.env['OUTGOING_PORT'] ?? '3004'}`).replace(/\/+$/, '');
  if (reconcile) return reconcileCommand(base, apiKey, args.includes('--fix'));
  if (file === undefined) return 2;
  const report = option(args, 'report') ?? `${file}.report.csv`;
  const format = ['.jsonl', '.ndjson'].includes(extname(file).toLowerCase()) ? 'application/x-ndjson' : 'text/csv';
  const headers = { 'x-api-key': apiKey };
  const submitted = await request(`${base}/identifiers/jobs?action=${action}`, { method: 'POST', headers: { ...headers, 'content-type': format }, body: readFileSync(file, 'utf8') });
  const job = (await submitted.body.json()) as { jobId?: string; total?: number; message?: string };
  if (submitted.statusCode !== 202 || job.jobId === undefined) {
    process.stderr.write(`the connector refused the file: HTTP ${submitted.statusCode} ${job.message ?? ''}\n`);
    return 1;
  }
  let view: { state: string; total: number; processed: number; outcomes: Record<string, number> };
  for (;;) {
    const asked = performance.now();
    const answer = await request(`${base}/identifiers/jobs/${job.jobId}`, { headers });
    const body = (await answer.body.json()) as typeof view & { message?: string };
    if (answer.statusCode !== 200) {
      // The job goes on in the connector (or is resumed by its recovery pass): say so, do not wait blind.
      process.stderr.write(`\nthe connector could not give the job's progress: HTTP ${answer.statusCode} ${body.message ?? ''}\njob ${job.jobId} goes on; ask again with GET /identifiers/jobs/${job.jobId}\n`);
      return 1;
    }
    view = body;
    process.stderr.write(`\r${bar(view.processed, view.total)}`);
    if (view.state === 'DONE') break;
    // A large job's progress takes the connector a while to count: ask again after ten times that.
    await new Promise((resolve) => setTimeout(resolve, nextPollDelayMs(performance.now() - asked)));
  }
  process.stderr.write('\n');
  const lines = await request(`${base}/identifiers/jobs/${job.jobId}/lines?format=csv`, { headers });
  const text = await lines.body.text();
  if (lines.statusCode !== 200) {
    process.stderr.write(`the connector could not give the job's report: HTTP ${lines.statusCode} ${text}\n`);
    return 1;
  }
  writeFileSync(report, text);
  const summary = Object.entries(view.outcomes)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([outcome, count]) => `${outcome} ${count}`)
    .join(', ');
  process.stdout.write(`job ${job.jobId}: ${view.total} lines: ${summary}\nreport: ${report}\n`);
  // A line is done when its identifier ended as asked: an opt-in's REGISTERED, an opt-out's
  // DEREGISTERED. An opt-in line whose identifier was opted out (DEREGISTERED) had counted as done.
  const done = view.outcomes[action === 'opt-out' ? 'DEREGISTERED' : 'REGISTERED'] ?? 0;
  return done === view.total ? 0 : 3;
}

/** The daily reconciliation of payments against the institution's transactions (operations server). */
async function reconcilePaymentsCommand(args: string[]): Promise<number> {
  const date = option(args, 'date');
  const from = option(args, 'from');
  const to = option(args, 'to');
  const format = option(args, 'format') ?? 'csv';
  // A day, or a period of its own (a busy day in parts, as a refusal over RECONCILIATION_MAX_RECORDS asks).
  const period = date !== undefined && from === undefined && to === undefined ? date : date === undefined && from !== undefined && to !== undefined ? `${from}..${to}` : undefined;
  if (period === undefined || (format !== 'csv' && format !== 'json')) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const token = process.env['OPERATOR_TOKEN'];
  if (token === undefined || token === '') {
    process.stderr.write("OPERATOR_TOKEN: set it (environment or .env) to your operator token (one of OPERATOR_CREDENTIALS)\n");
    return 2;
  }
  const base = (option(args, 'url') ?? `http://127.0.0.1:${process.env['OPERATIONS_PORT'] ?? '3005'}`).replace(/\/+$/, '');
  const headers = { authorization: `Bearer ${token}` };
  const query = date !== undefined ? `date=${encodeURIComponent(date)}` : `from=${encodeURIComponent(from ?? '')}&to=${encodeURIComponent(to ?? '')}`;
  // One report, asked for once: its counts and its file (CSV written here as the server writes it)
  // come from the same answer, never from a second report the institution may answer otherwise.
  const answer = await request(`${base}/operations/reconciliation?${query}`, { headers });
  const text = await answer.body.text();
  const body = jsonOrUndefined(text);
  if (answer.statusCode !== 200) {
    const message = typeof body === 'object' && body !== null && 'message' in body && typeof body.message === 'string' ? body.message : text.slice(0, 200);
    process.stderr.write(`the connector refused: HTTP ${answer.statusCode} ${message}\n`);
    return 1;
  }
  const report = readReport(body);
  if (report === undefined) {
    process.stderr.write(`the connector's answer is not a reconciliation report (HTTP ${answer.statusCode}); nothing written\n`);
    return 1;
  }
  const out = option(args, 'out') ?? `reconciliation-${period.replace(/[^0-9A-Za-z.-]/g, '')}.${format}`;
  writeFileSync(out, format === 'csv' ? [...reportCsv(report)].join('') : `${JSON.stringify(report, null, 2)}\n`);
  const counts = report.counts;
  process.stdout.write(`${period}: ${Object.entries(counts).map(([category, count]) => `${category} ${count}`).join(', ')}\nreport: ${out}\n`);
  const discrepancies = counts.missing_at_institution + counts.unknown_to_connector + counts.amount_mismatch;
  return discrepancies === 0 ? 0 : 3;
}

function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // Not JSON (a proxy's page, a cut answer): the caller says so.
    return undefined;
  }
}

/** Lists what the registry and the institution disagree on; with --fix, opts out and registers to agree. */
async function reconcileCommand(base: string, apiKey: string, fix: boolean): Promise<number> {
  const headers = { 'x-api-key': apiKey };
  const answer = await request(`${base}/identifiers/reconciliation`, { headers });
  const found = (await answer.body.json()) as {
    registeredButIneligible?: Array<Record<string, string>>;
    eligibleNotRegistered?: Array<Record<string, string>>;
    invalidAtInstitution?: Array<Record<string, string>>;
    message?: string;
  };
  if (answer.statusCode !== 200 || found.registeredButIneligible === undefined || found.eligibleNotRegistered === undefined) {
    process.stderr.write(`reconciliation refused: HTTP ${answer.statusCode} ${found.message ?? ''}\n`);
    return 1;
  }
  const name = (id: Record<string, string>): string => [id['idType'], id['idValue'], id['idSubValue']].filter((part) => part !== undefined).join('/');
  for (const item of found.registeredButIneligible) process.stdout.write(`registered but ineligible: ${name(item)} (${item['reason'] ?? ''})\n`);
  for (const item of found.eligibleNotRegistered) process.stdout.write(`eligible, not registered: ${name(item)}\n`);
  // The institution's records that break their type's rule: neither registered nor fixed, for the institution to correct.
  const invalid = found.invalidAtInstitution ?? [];
  for (const item of invalid) process.stdout.write(`institution record breaks its rule: ${name(item)} (${item['problem'] ?? ''})\n`);
  process.stdout.write(`${found.registeredButIneligible.length} to opt out, ${found.eligibleNotRegistered.length} to register${invalid.length === 0 ? '' : `, ${invalid.length} to correct at the institution`}\n`);
  if (!fix) return found.registeredButIneligible.length + found.eligibleNotRegistered.length + invalid.length === 0 ? 0 : 3;
  const fixed = await request(`${base}/identifiers/reconciliation/fix`, { method: 'POST', headers });
  const result = (await fixed.body.json()) as { optedOut: number; registered: number; problems: string[] };
  process.stdout.write(`fixed: ${result.optedOut} opted out, ${result.registered} registered${result.problems.length === 0 ? '' : `; ${result.problems.length} problem(s): ${result.problems.join('; ')}`}\n`);
  return result.problems.length > 0 ? 1 : invalid.length > 0 ? 3 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
