/**
 * The operations console: a page served by the connector's operations server, talking only to
 * its /operations API with the operator's bearer token (kept for this tab only). It shows what
 * the connector knows and offers the operator actions; every decision stays on the server.
 */

interface Item {
  readonly subject: 'incoming_transfer' | 'outgoing_payment';
  readonly id: string;
  readonly transferId: string | null;
  readonly state: string;
  readonly amount: string;
  readonly currency: string;
  readonly needsAttention: boolean;
  readonly attempts: number;
  readonly lastError: string | null;
  readonly createdAt: string;
}

interface AuditEvent {
  readonly seq: number;
  readonly at: string;
  readonly event: string;
  readonly fromState: string | null;
  readonly toState: string;
  readonly cause: string;
  readonly operator: string | null;
  readonly reason: string | null;
  readonly evidence: string | null;
  readonly attempt: number;
  readonly institutionReference: string | null;
  readonly errorCode: string | null;
}

interface Detail {
  readonly item: Item;
  readonly detail: Record<string, unknown>;
  readonly history: readonly AuditEvent[];
}

const INCOMING_STATES = ['RECEIVED', 'RESERVED', 'COMMITTING', 'COMMITTED', 'RELEASING', 'ABORTED', 'REJECTED'];
const OUTGOING_STATES = ['INITIATING', 'QUOTED', 'COLLECTING', 'AWAITING_DEBIT', 'ACCEPTING', 'CONFIRMING', 'REFUNDING', 'COMPLETED', 'REFUNDED', 'ABORTED', 'FAILED'];
/** What an operator may record by hand, by state (the server checks it again). */
const MANUAL_OUTCOMES: Readonly<Record<string, readonly string[]>> = {
  COMMITTING: ['COMMITTED'],
  RELEASING: ['ABORTED'],
  REFUNDING: ['REFUNDED'],
  COLLECTING: ['ABORTED'],
  AWAITING_DEBIT: ['ABORTED'],
  // An outgoing payment whose outcome only the hub knows: the hub's word, when the switch cannot give it.
  CONFIRMING: ['COMPLETED', 'ABORTED'],
  // A flagged item in a final state: resolved to itself, its flag cleared (settled out of band).
  COMMITTED: ['COMMITTED'],
  ABORTED: ['ABORTED'],
  REJECTED: ['REJECTED'],
  COMPLETED: ['COMPLETED'],
  REFUNDED: ['REFUNDED'],
  FAILED: ['FAILED'],
};
const TOKEN_KEY = 'operator-token';

function element<T extends HTMLElement>(id: string, type: new () => T): T {
  const found = document.getElementById(id);
  if (!(found instanceof type)) throw new Error(`the page has no ${type.name} #${id}`);
  return found;
}

const page = {
  signIn: element('sign-in', HTMLElement),
  signInForm: element('sign-in-form', HTMLFormElement),
  token: element('token', HTMLInputElement),
  signedIn: element('signed-in', HTMLParagraphElement),
  signOut: element('sign-out', HTMLButtonElement),
  workspace: element('workspace', HTMLDivElement),
  status: element('status', HTMLParagraphElement),
  problem: element('problem', HTMLParagraphElement),
  glance: element('glance', HTMLDivElement),
  searchForm: element('search-form', HTMLFormElement),
  searchState: element('search-state', HTMLSelectElement),
  results: element('results', HTMLTableElement),
  resultsCaption: element('results-caption', HTMLTableCaptionElement),
  detail: element('detail', HTMLElement),
  detailTitle: element('detail-title', HTMLHeadingElement),
  facts: element('detail-facts', HTMLDListElement),
  history: element('history', HTMLTableElement),
  actionForm: element('action-form', HTMLFormElement),
  choiceSwitch: element('choice-switch', HTMLDivElement),
  outcome: element('action-outcome', HTMLSelectElement),
  outcomeField: element('outcome-field', HTMLDivElement),
  reason: element('action-reason', HTMLInputElement),
  evidence: element('action-evidence', HTMLInputElement),
  evidenceField: element('evidence-field', HTMLDivElement),
  confirm: element('confirm', HTMLDialogElement),
  confirmText: element('confirm-text', HTMLParagraphElement),
  reconForm: element('recon-form', HTMLFormElement),
  reconDate: element('recon-date', HTMLInputElement),
  reconCsv: element('recon-csv', HTMLAnchorElement),
  reconResult: element('recon-result', HTMLDivElement),
};

let current: Detail | undefined;

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const token = sessionStorage.getItem(TOKEN_KEY) ?? '';
  const response = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const parsed: unknown = text === '' ? undefined : JSON.parse(text);
  if (!response.ok) {
    const message = typeof parsed === 'object' && parsed !== null && 'message' in parsed ? String(parsed.message) : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return parsed as T;
}

function say(text: string): void {
  page.problem.hidden = true;
  page.status.textContent = text;
}

function complain(error: unknown): void {
  page.problem.hidden = false;
  page.problem.textContent = error instanceof Error ? error.message : String(error);
  if (error instanceof ApiError && error.status === 401) showSignIn();
}

function cell(row: HTMLTableRowElement, text: string): HTMLTableCellElement {
  const td = row.insertCell();
  td.textContent = text;
  return td;
}

function time(iso: string): string {
  return iso.replace('T', ' ').replace(/\.\d{3}Z$/, '');
}

function showSignIn(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  page.workspace.hidden = true;
  page.signIn.hidden = false;
  page.signedIn.hidden = true;
  page.signOut.hidden = true;
  page.token.focus();
}

async function enter(): Promise<void> {
  const who = await api<{ operator: string }>('GET', '/operations/whoami');
  page.signIn.hidden = true;
  page.workspace.hidden = false;
  page.signedIn.hidden = false;
  page.signedIn.textContent = `Signed in as ${who.operator}`;
  page.signOut.hidden = false;
  page.reconDate.value = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  say(`Signed in as ${who.operator}.`);
  await refreshGlance();
}

async function refreshGlance(): Promise<void> {
  const summary = await api<{
    incomingTransfers: Record<string, number>;
    outgoingPayments: Record<string, number>;
    needingAttention: Record<string, number>;
    requests: Array<{ server: string; route: string; count: number; meanMs: number }>;
    institutionCalls: Array<{ operation: string; count: number; meanMs: number }>;
  }>('GET', '/operations/summary');
  page.glance.replaceChildren(
    countsTable('Incoming transfers by state', summary.incomingTransfers),
    countsTable('Outgoing payments by state', summary.outgoingPayments),
    countsTable('Needing attention', summary.needingAttention),
    latencyTable('Institution calls', ['Operation', 'Calls', 'Mean ms'], summary.institutionCalls.map((call) => [call.operation, String(call.count), String(call.meanMs)])),
    latencyTable('Requests', ['Server', 'Route', 'Requests', 'Mean ms'], summary.requests.map((request) => [request.server, request.route, String(request.count), String(request.meanMs)])),
  );
}

function countsTable(title: string, counts: Record<string, number>): HTMLTableElement {
  const rows = Object.entries(counts).map(([name, count]) => [name, String(count)]);
  return latencyTable(title, ['', 'Count'], rows.length === 0 ? [['none', '0']] : rows);
}

function latencyTable(title: string, headings: readonly string[], rows: ReadonlyArray<readonly string[]>): HTMLTableElement {
  const table = document.createElement('table');
  table.className = 'small';
  table.createCaption().textContent = title;
  const head = table.createTHead().insertRow();
  for (const heading of headings) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = heading;
    head.append(th);
  }
  const body = table.createTBody();
  for (const values of rows) {
    const row = body.insertRow();
    for (const value of values) cell(row, value);
  }
  return table;
}

async function search(): Promise<void> {
  const form = new FormData(page.searchForm);
  const query = new URLSearchParams();
  for (const name of ['id', 'subject', 'state']) {
    const value = String(form.get(name) ?? '').trim();
    if (value !== '') query.set(name, value);
  }
  for (const name of ['from', 'to']) {
    const value = String(form.get(name) ?? '');
    // datetime-local gives YYYY-MM-DDTHH:MM (or with seconds), read here as UTC.
    if (value !== '') query.set(name, value.length === 16 ? `${value}:00.000Z` : `${value}Z`);
  }
  if (form.get('attention') === 'on') query.set('attention', 'true');
  const found = await api<{ items: Item[]; truncated: boolean }>('GET', `/operations/items?${query.toString()}`);
  const body = page.results.tBodies[0];
  if (body === undefined) return;
  body.replaceChildren();
  for (const item of found.items) {
    const row = body.insertRow();
    cell(row, item.subject === 'incoming_transfer' ? 'Incoming' : 'Outgoing');
    cell(row, item.id).className = 'id';
    cell(row, item.state);
    cell(row, `${item.amount} ${item.currency}`);
    cell(row, item.needsAttention ? 'Yes' : 'No');
    cell(row, time(item.createdAt));
    const open = document.createElement('button');
    open.type = 'button';
    open.textContent = 'Open';
    open.setAttribute('aria-label', `Open ${item.subject === 'incoming_transfer' ? 'incoming transfer' : 'outgoing payment'} ${item.id}`);
    open.addEventListener('click', () => void openItem(item.subject, item.id).catch(complain));
    cell(row, '').append(open);
  }
  page.results.hidden = false;
  page.resultsCaption.textContent = `${found.items.length} found${found.truncated ? ' (the first 200; narrow the search)' : ''}`;
  say(`${found.items.length} found.`);
}

async function openItem(subject: string, id: string): Promise<void> {
  current = await api<Detail>('GET', `/operations/items/${subject}/${encodeURIComponent(id)}`);
  renderDetail(current);
  page.detail.hidden = false;
  page.detailTitle.focus();
}

function renderDetail(detail: Detail): void {
  const { item } = detail;
  page.detailTitle.textContent = `${item.subject === 'incoming_transfer' ? 'Incoming transfer' : 'Outgoing payment'} ${item.id}: ${item.state}`;
  page.facts.replaceChildren();
  for (const [name, value] of Object.entries(detail.detail)) {
    if (value === null || value === undefined) continue;
    const dt = document.createElement('dt');
    dt.textContent = name;
    const dd = document.createElement('dd');
    dd.textContent = typeof value === 'object' ? JSON.stringify(value) : String(value);
    page.facts.append(dt, dd);
  }
  const body = page.history.tBodies[0];
  if (body !== undefined) {
    body.replaceChildren();
    for (const event of detail.history) {
      const row = body.insertRow();
      cell(row, String(event.seq));
      cell(row, time(event.at));
      cell(row, event.event === 'created' ? `created in ${event.toState}` : event.fromState === event.toState ? `${event.toState} (${event.event})` : `${event.fromState ?? '?'} → ${event.toState}`);
      cell(row, event.operator === null ? event.cause : `${event.cause}: ${event.operator}`);
      cell(row, String(event.attempt));
      cell(row, event.errorCode ?? '');
      cell(row, event.institutionReference ?? '').className = 'id';
      cell(row, [event.reason, event.evidence].filter((part) => part !== null).join(' | '));
    }
  }
  page.choiceSwitch.hidden = item.subject !== 'outgoing_payment';
  updateActionFields();
}

function chosenAction(): string {
  const checked = page.actionForm.querySelector<HTMLInputElement>('input[name="action"]:checked');
  return checked?.value ?? 'retry';
}

function updateActionFields(): void {
  const action = chosenAction();
  const state = current?.item.state ?? '';
  const outcomes = action === 'switch' ? ['COMPLETED', 'ABORTED'] : action === 'resolve' ? (refundHeldBack() ? ['COMPLETED', 'REFUNDED'] : (MANUAL_OUTCOMES[state] ?? [])) : [];
  const kept = page.outcome.value;
  page.outcome.replaceChildren(...outcomes.map((outcome) => new Option(outcome, outcome)));
  // A change of the outcome itself keeps the operator's choice.
  if (outcomes.includes(kept)) page.outcome.value = kept;
  page.outcomeField.hidden = action === 'retry';
  page.evidenceField.hidden = action !== 'resolve';
  page.evidence.required = action === 'resolve';
}

/** A refund held back because the switch reported the transfer completed after it began: COMPLETED may be recorded too. */
function refundHeldBack(): boolean {
  return current?.item.state === 'REFUNDING' && current.detail['switchState'] === 'COMPLETED' && (current.item.lastError ?? '').startsWith('the switch reported ');
}

function describeAction(action: string, item: Item, outcome: string): string {
  const what = `${item.subject === 'incoming_transfer' ? 'incoming transfer' : 'outgoing payment'} ${item.id} (now ${item.state})`;
  if (action === 'retry') return `Make ${what} due now: the recovery worker tries its next step at once.`;
  if (action === 'switch') return `Ask the switch for ${what} and apply its outcome only if it reports ${outcome}${outcome === 'ABORTED' ? ': the customer is refunded once' : ''}.`;
  if (outcome === item.state) return `Clear the flag of ${what}: you settled it out of band. Its state stays ${outcome}; the connector moves no money; it is recorded with your name, reason and evidence.`;
  if (item.state === 'CONFIRMING' && outcome === 'ABORTED') return `Record that the hub aborted ${what}, on the hub's word: the connector refunds the customer once through the institution. It is recorded with your name, reason and evidence.`;
  if (item.state === 'REFUNDING' && outcome === 'COMPLETED') return `Record ${what} as COMPLETED: the switch reported the transfer completed, so the customer is not refunded (the institution shows no refund under its reference). The connector moves no money; it is recorded with your name, reason and evidence.`;
  if (item.state === 'CONFIRMING') return `Record ${what} as ${outcome} on the hub's word. The connector moves no money for this; it is recorded with your name, reason and evidence.`;
  return `Record ${what} as ${outcome} on the institution's word. The connector moves no money for this; it is recorded with your name, reason and evidence.`;
}

async function act(): Promise<void> {
  if (current === undefined) return;
  const item = current.item;
  const action = chosenAction();
  const outcome = page.outcome.value;
  const reason = page.reason.value.trim();
  const evidence = page.evidence.value.trim();
  if (reason === '') throw new Error('Give a reason: it is recorded in the audit trail.');
  if (action === 'resolve' && evidence === '') throw new Error('Give the evidence: what the institution or the hub confirmed, and its reference.');
  if (action !== 'retry' && outcome === '') throw new Error(`No outcome can be recorded by hand for an item in ${item.state}.`);
  page.confirmText.textContent = describeAction(action, item, outcome);
  page.confirm.returnValue = '';
  page.confirm.showModal();
  const answer = await new Promise<string>((resolve) => page.confirm.addEventListener('close', () => resolve(page.confirm.returnValue), { once: true }));
  if (answer !== 'confirm') {
    say('Action cancelled; nothing changed.');
    return;
  }
  const base = `/operations/items/${item.subject}/${encodeURIComponent(item.id)}`;
  if (action === 'retry') await api('POST', `${base}/retry`, { reason });
  else if (action === 'switch') await api('POST', `${base}/apply-switch-outcome`, { outcome, reason });
  else await api('POST', `${base}/resolve`, { outcome, reason, evidence });
  // The list shown before the action is brought up to date too.
  if (!page.results.hidden) await search();
  await openItem(item.subject, item.id);
  page.reason.value = '';
  page.evidence.value = '';
  await refreshGlance();
  say(`Done: ${page.detailTitle.textContent ?? ''}`);
}

async function reconcile(): Promise<void> {
  const date = page.reconDate.value;
  const report = await api<{ counts: Record<string, number>; lines: Array<Record<string, string | null>> }>('GET', `/operations/reconciliation?date=${encodeURIComponent(date)}`);
  const discrepancies = report.lines.filter((line) => line['category'] !== 'matched');
  page.reconResult.replaceChildren(
    countsTable(`Reconciliation of ${date}`, report.counts),
    latencyTable(
      'Lines other than matched',
      ['Category', 'Reference', 'Direction', 'Connector state', 'Expected', 'Booked', 'Note'],
      discrepancies.map((line) => [line['category'] ?? '', line['reference'] ?? '', line['direction'] ?? '', line['connectorState'] ?? '', line['expectedAmount'] ?? '', line['institutionAmount'] ?? '', line['note'] ?? '']),
    ),
  );
  page.reconCsv.hidden = false;
  say(`Reconciled ${date}: ${discrepancies.length} line(s) need a look.`);
}

async function downloadCsv(): Promise<void> {
  const token = sessionStorage.getItem(TOKEN_KEY) ?? '';
  const date = page.reconDate.value;
  const response = await fetch(`/operations/reconciliation?date=${encodeURIComponent(date)}&format=csv`, { headers: { authorization: `Bearer ${token}` } });
  if (!response.ok) throw new ApiError(response.status, `HTTP ${response.status}`);
  const link = document.createElement('a');
  link.href = URL.createObjectURL(await response.blob());
  link.download = `reconciliation-${date}.csv`;
  link.click();
  URL.revokeObjectURL(link.href);
}

function fillStates(): void {
  for (const state of [...new Set([...INCOMING_STATES, ...OUTGOING_STATES])]) page.searchState.add(new Option(state, state));
}

function run(work: () => Promise<void>): (event: Event) => void {
  return (event) => {
    event.preventDefault();
    work().catch(complain);
  };
}

fillStates();
page.signInForm.addEventListener(
  'submit',
  run(async () => {
    sessionStorage.setItem(TOKEN_KEY, page.token.value);
    page.token.value = '';
    await enter();
  }),
);
page.signOut.addEventListener('click', () => {
  showSignIn();
  say('Signed out.');
});
page.searchForm.addEventListener('submit', run(search));
page.actionForm.addEventListener('submit', run(act));
page.actionForm.addEventListener('change', (event) => {
  if (event.target instanceof HTMLInputElement && event.target.name === 'action') updateActionFields();
});
page.reconForm.addEventListener('submit', run(reconcile));
page.reconCsv.addEventListener('click', run(downloadCsv));
if (sessionStorage.getItem(TOKEN_KEY) !== null) enter().catch(complain);
else showSignIn();
