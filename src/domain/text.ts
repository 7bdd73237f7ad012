/**
 * Rules every text the connector accepts follows, whatever the field: no control characters
 * (C0, DEL, C1: nothing a name, an id or a note needs, and what log and terminal injection use)
 * and no lone UTF-16 surrogates (not Unicode: they cannot be encoded as UTF-8 for the switch).
 */

// \p{Cc}: control characters; \p{Cs}: surrogate code points, which with the u flag match only
// a surrogate that is not half of a pair.
const FORBIDDEN = /[\p{Cc}\p{Cs}]/u;

/** Why `text` cannot be accepted, or undefined when it can. */
export function textProblem(text: string): string | undefined {
  const found = FORBIDDEN.exec(text);
  if (found === null) return undefined;
  const code = found[0].codePointAt(0) ?? 0;
  const where = `at character ${found.index + 1}`;
  const hex = code.toString(16).toUpperCase().padStart(4, '0');
  return code >= 0xd800 && code <= 0xdfff ? `has a lone surrogate U+${hex} ${where}` : `has a control character U+${hex} ${where}`;
}
