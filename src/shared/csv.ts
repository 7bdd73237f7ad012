/**
 * One field of a CSV file a person opens in a spreadsheet (RFC 4180): quoted when it holds a
 * quote, a comma or a line break, its quotes doubled. A leading =, +, -, @, tab or carriage return
 * would be read as a formula by a spreadsheet: quoted with an apostrophe. A negative decimal
 * number alone is left as it is.
 */
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) && !/^-\d+(\.\d+)?$/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
