import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll } from 'vitest';

/** Debian's Chromium (`apt-get install -y chromium`), or `CHROMIUM_PATH`. */
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * The browser of a test file: Debian's Chromium driven by playwright-core, closed after the file. When Chromium is
 * missing and the tests run as root (CI, a fresh machine of this project), it is installed first as `.ci/run` does;
 * otherwise the error says how to install it.
 */
export async function useBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) installChromium();
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  afterAll(() => browser.close());
  return browser;
}

function installChromium(): void {
  if (process.getuid?.() !== 0) {
    throw new Error(
      `The browser tests need Chromium at ${CHROMIUM}: install it with "sudo apt-get install -y chromium" (Debian), or set CHROMIUM_PATH to a Chromium binary.`,
    );
  }
  const apt = (...args: string[]) =>
    execFileSync('apt-get', args, {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  try {
    apt('install', '-y', '-q', 'chromium');
  } catch {
    apt('update', '-q');
    apt('install', '-y', '-q', 'chromium');
  }
}

/** Where a test's screenshots go: docs/images/console with `UPDATE_SCREENSHOTS=1` (for the docs), else a temp folder. */
export function screenshotDir(): string {
  const dir =
    process.env.UPDATE_SCREENSHOTS === '1'
      ? fileURLToPath(new URL('../../docs/images/console', import.meta.url))
      : join(tmpdir(), `console-screenshots-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Saves a full-page screenshot `name`.png and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const path = join(screenshotDir(), `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The text of every cell of the table under the heading `title` (rows of cells), as the page shows them. */
export async function tableUnder(page: Page, title: string): Promise<string[][]> {
  const section = page.locator('section', { has: page.locator('h2', { hasText: title }) });
  return section
    .locator('tbody tr')
    .evaluateAll((rows) =>
      rows.map((row) =>
        (Array.from(row.querySelectorAll('td')) as Array<{ textContent: string | null }>).map((td) =>
          (td.textContent ?? '').trim(),
        ),
      ),
    );
}

/** The rows of the last list (a table with a head row) on the page: an action's preview or result. */
export async function lastList(page: Page): Promise<string[][]> {
  return page
    .locator('main table:has(thead)')
    .last()
    .locator('tbody tr')
    .evaluateAll((rows) =>
      rows.map((row) =>
        (Array.from(row.querySelectorAll('td')) as Array<{ textContent: string | null }>).map((td) =>
          (td.textContent ?? '').trim(),
        ),
      ),
    );
}
