/**
 * The logging the aggregate needs (pino satisfies it). Log ids, states, codes and durations;
 * never names, addresses, birth dates, PINs, secrets or whole payloads.
 */
export interface Logger {
  fatal(bindings: object, message: string): void;
  error(bindings: object, message: string): void;
  warn(bindings: object, message: string): void;
  info(bindings: object, message: string): void;
  debug(bindings: object, message: string): void;
}
