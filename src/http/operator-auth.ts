import type { FastifyRequest } from 'fastify';
import { ConnectorError } from '../domain/errors.js';
import { secretMatches } from './outgoing-auth.js';

export interface OperatorAuth {
  /** An onRequest hook: the request must carry one operator's token as `Authorization: Bearer ...`. */
  readonly authenticate: (request: FastifyRequest) => Promise<void>;
  /** The name of the operator an authenticated request came from. */
  readonly operatorOf: (request: FastifyRequest) => string;
}

/**
 * Operators' bearer tokens (OPERATOR_CREDENTIALS), for the operations servers of both modes.
 * Every operator's token is compared, so the time taken does not tell which one matched.
 */
export function operatorAuth(operators: ReadonlyArray<{ readonly name: string; readonly token: string }>): OperatorAuth {
  const names = new WeakMap<FastifyRequest, string>();
  return {
    async authenticate(request) {
      const header = request.headers.authorization;
      const token = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : undefined;
      let found: string | undefined;
      for (const operator of operators) if (secretMatches(token, operator.token)) found = operator.name;
      if (found === undefined) throw new ConnectorError('Unauthorized', 'missing or wrong operator token (Authorization: Bearer ...)');
      names.set(request, found);
    },
    operatorOf(request) {
      const name = names.get(request);
      if (name === undefined) throw new ConnectorError('Unauthorized');
      return name;
    },
  };
}
