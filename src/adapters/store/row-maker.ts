/**
 * Makes a row object from its values in column order, as better-sqlite3 and `pg` would: each name
 * an own, enumerable property, a later column of the same name overwriting an earlier one's value
 * in the earlier one's place.
 */
export function rowMaker(names: readonly string[]): (values: readonly unknown[]) => Record<string, unknown> {
  // In a literal, a "__proto__" key would set the prototype instead of making a property.
  if (names.includes('__proto__')) {
    return (values) => {
      const row: Record<string, unknown> = {};
      names.forEach((name, index) => Object.defineProperty(row, name, { value: values[index], enumerable: true, writable: true, configurable: true }));
      return row;
    };
  }
  // The source holds nothing but JSON-quoted names and array indexes.
  const properties = names.map((name, index) => `${JSON.stringify(name)}: values[${index}]`).join(', ');
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  return new Function('values', `return { ${properties} };`) as (values: readonly unknown[]) => Record<string, unknown>;
}
