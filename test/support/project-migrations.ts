import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MIGRATIONS = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * The project's own migrations, in order, and the number a user's first migration takes after them: tests that add
 * a table (the README's `invoices`) number it from here, so a new project migration does not break them.
 */
export function projectMigrations(): {
  readonly files: readonly string[];
  readonly last: string;
  readonly lastNumber: number;
  /** The next number, five digits (`00014`). */
  readonly next: string;
} {
  const files = readdirSync(MIGRATIONS)
    .filter((name) => /^\d{5}_.+\.sql$/.test(name))
    .sort();
  const last = files.at(-1) as string;
  const lastNumber = Number(last.slice(0, 5));
  return { files, last, lastNumber, next: String(lastNumber + 1).padStart(5, '0') };
}
