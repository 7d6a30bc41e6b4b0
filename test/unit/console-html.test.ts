import { describe, expect, it } from 'vitest';
import { createConsoleSecrets, sameSecret } from '../../tools/console/console-secrets.ts';
import { html, raw } from '../../tools/console/html.ts';

describe("Function: html (the console's markup)", () => {
  it('escapes every interpolated value, in text and in attributes, unless it is markup the console built', () => {
    // Prepare: values as a queue or a table may hold them
    const key = '<img src=x onerror=alert(1)>';
    const attribute = '" onmouseover="alert(1)';

    // Act
    const rendered = html`<td title="${attribute}">${key}</td>${html`<b>${'&'}</b>`}${raw('<hr>')}${[1, null, false]}`;

    // Assess
    expect(rendered.text).toBe(
      '<td title="&quot; onmouseover=&quot;alert(1)">&lt;img src=x onerror=alert(1)&gt;</td><b>&amp;</b><hr>1',
    );
  });
});

describe('Function: createConsoleSecrets()', () => {
  it('derives the CSRF token from the run token, and compares secrets of any length without throwing', () => {
    // Act
    const a = createConsoleSecrets('token-a');
    const b = createConsoleSecrets('token-b');
    const fresh = createConsoleSecrets();

    // Assess
    expect(a.csrf).not.toBe(b.csrf);
    expect(createConsoleSecrets('token-a').csrf).toBe(a.csrf);
    expect(Buffer.from(fresh.token, 'base64url')).toHaveLength(32);
    expect(sameSecret(a.token, a.token)).toBe(true);
    expect(sameSecret('short', a.token)).toBe(false);
    expect(sameSecret(undefined, a.token)).toBe(false);
  });
});
