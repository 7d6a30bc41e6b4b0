import { describe, expect, it } from 'vitest';
import { JsonTooDeepError } from '../../lambda/errors.ts';
import { MAX_PAYLOAD_DEPTH } from '../../lambda/worker/json-depth.ts';
import { canonicalJson, requestHash } from '../../lambda/worker/request-hash.ts';
import { nestedArrays } from '../support/nested-json.ts';

describe('Function: requestHash()', () => {
  const base = {
    messageType: 'PaymentCaptured',
    schemaVersion: 1,
    payload: { b: 1, a: { y: [1, 2], x: 'v' } },
  };

  it('is the same for any key order at any depth', () => {
    // Prepare
    const reordered = {
      payload: { a: { x: 'v', y: [1, 2] }, b: 1 },
      schemaVersion: 1,
      messageType: 'PaymentCaptured',
    };

    // Act & Assess
    expect(requestHash(reordered)).toBe(requestHash(base));
    expect(canonicalJson(reordered.payload)).toBe('{"a":{"x":"v","y":[1,2]},"b":1}');
  });

  it.each([
    ['messageType', { ...base, messageType: 'PaymentRefunded' }],
    ['schemaVersion', { ...base, schemaVersion: 2 }],
    ['a payload value', { ...base, payload: { ...base.payload, b: 2 } }],
    ['a nested value', { ...base, payload: { b: 1, a: { y: [1, 2], x: 'w' } } }],
    ['array order', { ...base, payload: { b: 1, a: { y: [2, 1], x: 'v' } } }],
    ['a number written as a string', { ...base, payload: { ...base.payload, b: '1' } }],
  ])('differs when %s differs', (_name, changed) => {
    expect(requestHash(changed)).not.toBe(requestHash(base));
  });

  it('is a 64-character hex sha256', () => {
    expect(requestHash(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  describe('with a payloadRef', () => {
    const ref = { bucket: 'payloads', key: 'a/1', versionId: 'v1', sha256: 'a'.repeat(64), size: 10 };
    const byRef = { messageType: 'PaymentCaptured', schemaVersion: 1, payloadRef: ref };

    it('differs when the object differs (sha256 or size)', () => {
      expect(requestHash({ ...byRef, payloadRef: { ...ref, sha256: 'b'.repeat(64) } })).not.toBe(
        requestHash(byRef),
      );
      expect(requestHash({ ...byRef, payloadRef: { ...ref, size: 11 } })).not.toBe(requestHash(byRef));
    });

    it('is the same for the same bytes at another bucket, key or version', () => {
      const moved = { ...ref, bucket: 'payloads-eu', key: 'b/2', versionId: 'v9' };
      expect(requestHash({ ...byRef, payloadRef: moved })).toBe(requestHash(byRef));
    });

    it('keeps the hash of an inline payload as it was (hashes already stored stay valid)', () => {
      expect(requestHash(base)).toBe('a889f4e9019911ed54b46d9de2ebb758d2bf620830234a84821c675bc8bc56ad');
    });
  });
});

describe('Function: canonicalJson() and requestHash() at the depth bound', () => {
  const hashOf = (payload: Record<string, unknown>) =>
    requestHash({ messageType: 'PaymentCaptured', schemaVersion: 1, payload });

  it(`hashes a payload nested ${MAX_PAYLOAD_DEPTH} levels (the bound) as JSON.stringify would serialize it`, () => {
    // Prepare: the payload object is level 1, its tree the other 63.
    const payload = { tree: nestedArrays(MAX_PAYLOAD_DEPTH - 1) };

    // Act & Assess
    expect(hashOf(payload)).toMatch(/^[0-9a-f]{64}$/);
    expect(canonicalJson(payload)).toBe(JSON.stringify(payload));
  });

  it.each([MAX_PAYLOAD_DEPTH + 1, 5_000, 100_000])(
    'refuses a payload nested %i levels with JsonTooDeepError naming the bound, never a stack overflow',
    (levels) => {
      // Prepare
      const payload = { tree: nestedArrays(levels - 1) };

      // Act
      const attempt = () => hashOf(payload);

      // Assess
      expect(attempt).toThrow(JsonTooDeepError);
      expect(attempt).toThrow(`nests more than ${MAX_PAYLOAD_DEPTH + 1} levels`);
    },
  );

  it('counts depth through shared references by where they are, and refuses a cycle as too deep', () => {
    // Prepare: one array used at level 2 and at level 4.
    const shared = [1];
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;

    // Act & Assess
    expect(canonicalJson({ b: shared, a: [[shared]] })).toBe('{"a":[[[1]]],"b":[1]}');
    expect(canonicalJson({ b: shared, a: [[shared]] }, 4)).toBe('{"a":[[[1]]],"b":[1]}');
    expect(() => canonicalJson({ b: shared, a: [[shared]] }, 3)).toThrow(JsonTooDeepError);
    // Each object is serialized as a key-sorted copy, which JSON.stringify's cycle check cannot see: the bound stops it.
    expect(() => canonicalJson(cyclic)).toThrow(JsonTooDeepError);
  });
});
