import { describe, expect, it } from 'vitest';
import { transferStatusOf } from './sdk-client.js';

describe('transferStatusOf: only the switch\'s explicit words are outcomes', () => {
  it.each([
    [{ currentState: 'COMPLETED' }, 'COMPLETED'],
    [{ currentState: 'ERROR_OCCURRED', fulfil: { body: { transferState: 'COMMITTED' } } }, 'COMPLETED'],
    [{ currentState: 'ABORTED' }, 'ABORTED'],
    [{ currentState: 'ERROR_OCCURRED', fulfil: { body: { transferState: 'ABORTED' } } }, 'ABORTED'],
    [{ currentState: 'ERROR_OCCURRED', lastError: { mojaloopError: { errorInformation: { errorCode: '3208' } } } }, 'ABORTED'],
    [{ currentState: 'ERROR_OCCURRED', lastError: { mojaloopError: { errorInformation: { errorCode: '5100' } } } }, 'UNKNOWN'],
    [{ currentState: 'WAITING_FOR_QUOTE_ACCEPTANCE' }, 'WAITING_FOR_QUOTE_ACCEPTANCE'],
    [{ currentState: 'WAITING_FOR_PARTY_ACCEPTANCE' }, 'WAITING_FOR_PARTY_ACCEPTANCE'],
    [{ currentState: 'WAITING_FOR_CONVERSION_ACCEPTANCE' }, 'WAITING_FOR_CONVERSION_ACCEPTANCE'],
    [{ currentState: 'waiting_for_quote_acceptance' }, 'UNKNOWN'],
    [{ currentState: 'SOMETHING_NEW' }, 'UNKNOWN'],
    [{}, 'UNKNOWN'],
    ['COMPLETED', 'UNKNOWN'],
    [null, 'UNKNOWN'],
  ])('%j -> %s', (body, expected) => {
    expect(transferStatusOf(body)).toBe(expected);
  });
});
