import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REST_ERROR_CODES, REST_FAILURE_REASONS } from '../../src/adapters/core-banking/rest/rest-wire.js';
import { REST_EXCHANGE_ERROR_CODES } from '../../src/fxp/adapters/rest-exchange/rest-exchange.js';

/**
 * docs/reference-core-banking-api.yaml is the contract an institution implements from the
 * document alone: it must lint clean (redocly, recommended rules) and agree with what the
 * adapter reads and maps. The document is bundled to JSON by redocly and read back here.
 */

const run = promisify(execFile);
const DOCUMENT = 'docs/reference-core-banking-api.yaml';
const REDOCLY = join('node_modules', '.bin', 'redocly');

type Json = Record<string, unknown>;
let directory = '';
let api: Json = {};

function at(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) current = (current as Json | undefined)?.[key];
  return current;
}

function operations(): Array<{ name: string; responses: Json }> {
  const found: Array<{ name: string; responses: Json }> = [];
  for (const [path, item] of Object.entries(at(api, 'paths') as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) {
      found.push({ name: `${method.toUpperCase()} ${path}`, responses: at(operation, 'responses') as Json });
    }
  }
  return found;
}

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'reference-api-'));
  const bundled = join(directory, 'api.json');
  await run(REDOCLY, ['bundle', DOCUMENT, '--output', bundled, '--ext', 'json'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
  api = JSON.parse(await readFile(bundled, 'utf8')) as Json;
}, 60_000);

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('the reference core banking API document', () => {
  it('lints clean with redocly\'s recommended rules: no error, no warning', async () => {
    const { stdout } = await run(REDOCLY, ['lint', DOCUMENT, '--format', 'json'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
    const report = JSON.parse(stdout) as { totals: Json; problems: unknown[] };
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
    expect(report.problems).toEqual([]);
  }, 60_000);

  it('is version 1.2.0 and lists exactly the error codes the adapter knows', () => {
    expect(at(api, 'info', 'version')).toBe('1.2.0');
    expect(at(api, 'components', 'schemas', 'Error', 'properties', 'code', 'enum')).toEqual([...REST_ERROR_CODES]);
    expect(at(api, 'components', 'schemas', 'FailureReason', 'enum')).toEqual([...REST_FAILURE_REASONS]);
  });

  it('documents 400 INVALID_REQUEST and 401 UNAUTHORIZED on every operation', () => {
    const names = operations().map((operation) => operation.name);
    expect(names).toEqual([
      'GET /health',
      'GET /parties/{idType}/{idValue}',
      'POST /reservations',
      'POST /reservations/{reference}/commit',
      'POST /reservations/{reference}/release',
      'POST /collections',
      'POST /refunds',
      'GET /transactions/{reference}',
    ]);
    for (const operation of operations()) {
      expect(at(operation.responses, '400', '$ref'), operation.name).toBe('#/components/responses/InvalidRequest');
      expect(at(operation.responses, '401', '$ref'), operation.name).toBe('#/components/responses/Unauthorized');
    }
  });

  it('names every error code in the 4xx answers of some operation', () => {
    const described = operations()
      .flatMap((operation) => Object.entries(operation.responses))
      .filter(([status]) => status.startsWith('4'))
      .map(([, response]) => String(at(response, 'description') ?? ''))
      .concat(Object.values(at(api, 'components', 'responses') as Json).map((response) => String(at(response, 'description'))))
      .join(' ');
    expect(REST_ERROR_CODES.filter((code) => !new RegExp(`\\b${code}\\b`).test(described))).toEqual([]);
  });

  it('documents the refund rules on POST /refunds with their statuses', () => {
    const refunds = operations().find((operation) => operation.name === 'POST /refunds')?.responses ?? {};
    expect(String(at(refunds, '404', 'description'))).toMatch(/ORIGINAL_NOT_FOUND/);
    expect(String(at(refunds, '409', 'description'))).toMatch(/ORIGINAL_NOT_DEBITED/);
    expect(String(at(refunds, '422', 'description'))).toMatch(/PAYER_MISMATCH, CURRENCY_MISMATCH, REFUND_EXCEEDS_ORIGINAL/);
  });

  it('takes every channel id as a refund\'s originalReference: 1-128 characters, slashes included, no control characters', () => {
    const schema = at(api, 'components', 'schemas', 'OriginalReference') as Json;
    expect(schema).toMatchObject({ type: 'string', minLength: 1, maxLength: 128 });
    const pattern = new RegExp(String(schema['pattern']), 'u');
    expect(['branch/042/77', 'x'.repeat(128), 'Ünïcode €'].map((id) => pattern.test(id))).toEqual([true, true, true]);
    expect(['a\u0000b', 'tab\there', 'del\u007f'].map((id) => pattern.test(id))).toEqual([false, false, false]);
    expect(at(api, 'components', 'schemas', 'RefundRequest', 'properties', 'originalReference', '$ref')).toBe('#/components/schemas/OriginalReference');
  });

  it('describes the collection callback with institution-neutral statuses, as PUT /callback accepts it', () => {
    const callback = at(api, 'paths', '/collections', 'post', 'callbacks', 'collectionEnded', '{$request.body#/callbackUrl}', 'put');
    expect(at(callback, 'requestBody', 'content', 'application/json', 'schema', '$ref')).toBe('#/components/schemas/CollectionCallback');
    expect(at(api, 'components', 'schemas', 'CollectionCallback')).toMatchObject({
      required: ['reference', 'status'],
      properties: { status: { enum: ['SUCCEEDED', 'FAILED', 'PENDING'] } },
    });
    expect(String(at(api, 'paths', '/collections', 'post', 'description'))).toMatch(/within \*\*5 minutes\*\*/);
  });
});

describe('the reference exchange API document (FX provider mode)', () => {
  const EXCHANGE = 'docs/reference-exchange-api.yaml';
  let exchangeApi: Json = {};

  beforeAll(async () => {
    const bundled = join(directory, 'exchange.json');
    await run(REDOCLY, ['bundle', EXCHANGE, '--output', bundled, '--ext', 'json'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
    exchangeApi = JSON.parse(await readFile(bundled, 'utf8')) as Json;
  }, 60_000);

  it('lints clean with redocly\'s recommended rules', async () => {
    const { stdout } = await run(REDOCLY, ['lint', EXCHANGE, '--format', 'json'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
    expect((JSON.parse(stdout) as { totals: Json }).totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
  }, 60_000);

  it('lists exactly the error codes the adapter maps, and 400/401 on every operation', () => {
    expect(at(exchangeApi, 'components', 'schemas', 'Error', 'properties', 'code', 'enum')).toEqual([...REST_EXCHANGE_ERROR_CODES]);
    const paths = at(exchangeApi, 'paths') as Json;
    const names: string[] = [];
    for (const [path, item] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(item as Json)) {
        names.push(`${method.toUpperCase()} ${path}`);
        expect(at(operation, 'responses', '400', '$ref'), path).toBe('#/components/responses/InvalidRequest');
        expect(at(operation, 'responses', '401', '$ref'), path).toBe('#/components/responses/Unauthorized');
      }
    }
    expect(names).toEqual(['GET /health', 'GET /rates', 'POST /holds', 'GET /holds/{reference}', 'POST /holds/{reference}/commit', 'POST /holds/{reference}/release']);
  });
});
