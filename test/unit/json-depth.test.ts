import { describe, expect, it } from 'vitest';
import { jsonDepth, jsonTextDepth, MAX_PAYLOAD_DEPTH } from '../../lambda/worker/json-depth.ts';
import { nestedArrays } from '../support/nested-json.ts';

describe('Function: jsonTextDepth()', () => {
  it.each([
    ['0', 0],
    ['"text"', 0],
    ['{}', 1],
    ['[1, {"a": [2]}]', 3],
    ['{"a": {"b": 1}, "c": [[], []]}', 3],
    // Brackets and escaped quotes inside strings are text, not structure.
    ['{"a": "[[[{{{", "b": "\\"[[[\\\\", "c": ["\\\\"]}', 2],
    ['["\\u005b\\"]"]', 1],
  ])('counts %s as %i levels', (text, depth) => {
    // Act & Assess
    expect(JSON.parse(text)).toBeDefined();
    expect(jsonTextDepth(text)).toBe(depth);
  });

  it('counts 100,000 levels without recursion', () => {
    // Prepare
    const text = JSON.stringify({ payload: { tree: '' } }).replace(
      '""',
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
    );

    // Act & Assess
    expect(jsonTextDepth(text)).toBe(100_002);
  });
});

describe('Function: jsonDepth()', () => {
  it.each([
    [0, 0],
    [null, 0],
    [{}, 1],
    [[1, { a: [2] }], 3],
    [{ a: { b: 1 }, c: [[], []] }, 3],
    // As JSON.stringify sees it: a Date is a string.
    [{ at: new Date(0) }, 1],
  ])('counts %j as %i levels', (value, depth) => {
    expect(jsonDepth(value, MAX_PAYLOAD_DEPTH)).toBe(depth);
  });

  it('agrees with jsonTextDepth at the bound', () => {
    // Prepare
    const value = { tree: nestedArrays(MAX_PAYLOAD_DEPTH - 1) };

    // Act & Assess
    expect(jsonDepth(value, MAX_PAYLOAD_DEPTH)).toBe(MAX_PAYLOAD_DEPTH);
    expect(jsonTextDepth(JSON.stringify(value))).toBe(MAX_PAYLOAD_DEPTH);
  });

  it('stops counting one level above its limit, so any depth (and a cycle) is cheap to refuse', () => {
    // Prepare
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;

    // Act & Assess
    expect(jsonDepth(nestedArrays(100_000), MAX_PAYLOAD_DEPTH)).toBe(MAX_PAYLOAD_DEPTH + 1);
    expect(jsonDepth(cyclic, MAX_PAYLOAD_DEPTH)).toBe(MAX_PAYLOAD_DEPTH + 1);
  });
});
