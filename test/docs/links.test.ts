import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** README.md and every page of docs/. */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Markdown text without fenced code blocks and inline code, where a `[x](y)` is not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchors of a page: lowercase, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const [, heading] of withoutCode.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = (heading ?? '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** Every relative link of a page as `{ target, anchor }`; web and mail links are left out. */
function relativeLinks(markdown: string): { target: string; anchor: string | undefined }[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1] ?? '')
    .filter((href) => !/^[a-z][a-z0-9+.-]*:/i.test(href))
    .map((href) => {
      const [target = '', anchor] = href.split('#');
      return { target, anchor };
    });
}

describe('Document: links of README.md and docs/', () => {
  it('finds the pages and their links (the check has something to check)', () => {
    // Prepare
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

    // Act
    const links = relativeLinks(readme);

    // Assess
    expect(PAGES.length).toBeGreaterThan(5);
    expect(links.map((link) => link.target)).toContain('docs/semantics.md');
    expect(anchors('# What happens when…\n## `SqsDatabaseWorker` props\n## A b\n## A b')).toEqual(
      new Set(['what-happens-when', 'sqsdatabaseworker-props', 'a-b', 'a-b-1']),
    );
  });

  it.each(PAGES)('%s: every relative link resolves to a file, and its anchor to a heading', (page) => {
    // Prepare
    const markdown = readFileSync(join(ROOT, page), 'utf8');

    // Act
    const broken = relativeLinks(markdown).flatMap(({ target, anchor }) => {
      const path = target === '' ? join(ROOT, page) : join(ROOT, dirname(page), target);
      const shown = `${target}${anchor === undefined ? '' : `#${anchor}`}`;
      if (!existsSync(path)) return [`${shown}: no file ${relative(ROOT, path)}`];
      if (anchor === undefined || statSync(path).isDirectory() || !path.endsWith('.md')) return [];
      return anchors(readFileSync(path, 'utf8')).has(anchor) ? [] : [`${shown}: no heading with that anchor`];
    });

    // Assess
    expect(broken).toEqual([]);
  });
});
