import { describe, expect, it } from 'vitest';
import { recordTrace } from '../../lambda/tracing/record-trace.ts';
import {
  formatTraceparent,
  formatXRayTraceHeader,
  newTraceContext,
  parseTraceContext,
  parseTraceparent,
  parseXRayTraceHeader,
  TRACEPARENT_ATTRIBUTE_BYTES,
  withParentId,
} from '../../lambda/tracing/trace-context.ts';
import { sqsRecordFactory } from '../support/sqs-event.ts';

const ROOT = '1-5759e988-bd862e3fe1be46a994272793';
const PARENT = '53995c3f42cd8ad8';
const TRACEPARENT = `00-5759e988bd862e3fe1be46a994272793-${PARENT}-01`;

/** A record with these headers: AWSTraceHeader (system attribute) and traceparent (message attribute). */
function recordWith(headers: { awsTraceHeader?: string; traceparent?: string }) {
  const record = sqsRecordFactory('{}');
  if (headers.awsTraceHeader !== undefined) record.attributes.AWSTraceHeader = headers.awsTraceHeader;
  if (headers.traceparent !== undefined) {
    record.messageAttributes.traceparent = {
      dataType: 'String',
      stringValue: headers.traceparent,
      stringListValues: [],
      binaryListValues: [],
    };
  }
  return record;
}

describe('Function: parseXRayTraceHeader()', () => {
  it('reads Root, Parent and Sampled, ignoring other fields such as Lineage', () => {
    // Act
    const parsed = parseXRayTraceHeader(
      `Root=${ROOT};Parent=${PARENT};Sampled=1;Lineage=a87bd80c:1|68fd508a:5`,
    );

    // Assess
    expect(parsed).toEqual({ traceId: ROOT, parentId: PARENT, sampled: true });
  });

  it('accepts a header without Parent or Sampled (not sampled)', () => {
    expect(parseXRayTraceHeader(`Root=${ROOT}`)).toEqual({ traceId: ROOT, sampled: false });
    expect(parseXRayTraceHeader(`Root=${ROOT};Sampled=0`)).toEqual({ traceId: ROOT, sampled: false });
  });

  it.each([
    ['an empty string', ''],
    ['no Root', `Parent=${PARENT};Sampled=1`],
    ['a Root of the wrong shape', 'Root=1-5759e988-bd862e3f;Parent=53995c3f42cd8ad8'],
    ['an upper-case Root', `Root=${ROOT.toUpperCase()}`],
    ['a Parent of the wrong length', `Root=${ROOT};Parent=53995c3f`],
    ['an all-zero Parent', `Root=${ROOT};Parent=0000000000000000`],
    ['a payload smuggled into Root', `Root=${ROOT}{"card":"4111111111111111"}`],
    ['an over-long value', `Root=${ROOT};Parent=${PARENT};x=${'a'.repeat(600)}`],
    ['a traceparent', TRACEPARENT],
    ['not a string', 42],
    ['undefined', undefined],
  ])('ignores %s', (_name, header) => {
    expect(parseXRayTraceHeader(header)).toBeUndefined();
  });
});

describe('Function: parseTraceparent()', () => {
  it('reads a version 00 traceparent into an X-Ray trace id with the same 32 hex digits', () => {
    expect(parseTraceparent(TRACEPARENT)).toEqual({ traceId: ROOT, parentId: PARENT, sampled: true });
    expect(parseTraceparent(`00-5759e988bd862e3fe1be46a994272793-${PARENT}-00`)?.sampled).toBe(false);
  });

  it('accepts a future version with extra fields', () => {
    expect(parseTraceparent(`01-5759e988bd862e3fe1be46a994272793-${PARENT}-01-extra`)?.traceId).toBe(ROOT);
  });

  it.each([
    ['version ff', `ff-5759e988bd862e3fe1be46a994272793-${PARENT}-01`],
    ['version 00 with an extra field', `${TRACEPARENT}-extra`],
    ['an all-zero trace id', `00-00000000000000000000000000000000-${PARENT}-01`],
    ['an all-zero parent id', '00-5759e988bd862e3fe1be46a994272793-0000000000000000-01'],
    ['upper-case hex', TRACEPARENT.toUpperCase()],
    ['a short trace id', `00-5759e988bd862e3f-${PARENT}-01`],
    ['an X-Ray header', `Root=${ROOT};Parent=${PARENT};Sampled=1`],
    ['garbage', 'hello world'],
    ['not a string', { traceId: ROOT }],
  ])('ignores %s', (_name, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('Function: parseTraceContext()', () => {
  it('reads either form', () => {
    expect(parseTraceContext(`Root=${ROOT};Parent=${PARENT};Sampled=1`)).toEqual(
      parseTraceContext(TRACEPARENT),
    );
    expect(parseTraceContext('Root=1-2-3')).toBeUndefined();
  });
});

describe('Functions: formatXRayTraceHeader(), formatTraceparent()', () => {
  it('write both headers of one context, and each parses back to it', () => {
    // Prepare
    const context = { traceId: ROOT, parentId: PARENT, sampled: true };

    // Act
    const header = formatXRayTraceHeader(context);
    const traceparent = formatTraceparent(context);

    // Assess
    expect(header).toBe(`Root=${ROOT};Parent=${PARENT};Sampled=1`);
    expect(traceparent).toBe(TRACEPARENT);
    expect(parseXRayTraceHeader(header)).toEqual(context);
    expect(parseTraceparent(traceparent)).toEqual(context);
    expect(TRACEPARENT_ATTRIBUTE_BYTES).toBe('traceparent'.length + 'String'.length + traceparent.length);
  });

  it('give a context without parent a random one', () => {
    // Act
    const completed = withParentId({ traceId: ROOT, sampled: false });

    // Assess
    expect(completed.parentId).toMatch(/^[0-9a-f]{16}$/);
    expect(formatTraceparent(completed)).toMatch(/^00-5759e988bd862e3fe1be46a994272793-[0-9a-f]{16}-00$/);
  });
});

describe('Function: newTraceContext()', () => {
  it('makes an unsampled X-Ray trace id of the current second, different every time', () => {
    // Prepare
    const now = Date.parse('2026-12-01T16:00:00Z');

    // Act
    const first = newTraceContext(now);
    const second = newTraceContext(now);

    // Assess
    expect(first.traceId).toMatch(new RegExp(`^1-${(now / 1000).toString(16)}-[0-9a-f]{24}$`));
    expect(first.parentId).toMatch(/^[0-9a-f]{16}$/);
    expect(first.sampled).toBe(false);
    expect(second.traceId).not.toBe(first.traceId);
    expect(parseXRayTraceHeader(formatXRayTraceHeader(withParentId(first)))).toEqual(first);
  });
});

describe('Function: recordTrace()', () => {
  it('reads the AWSTraceHeader system attribute first', () => {
    // Prepare: both headers, of different traces
    const record = recordWith({
      awsTraceHeader: `Root=${ROOT};Parent=${PARENT};Sampled=1`,
      traceparent: `00-6759e988bd862e3fe1be46a994272793-${PARENT}-01`,
    });

    // Act & Assess
    expect(recordTrace(record)?.traceId).toBe(ROOT);
  });

  it('falls back to the traceparent message attribute (an emulator that drops system attributes)', () => {
    expect(recordTrace(recordWith({ traceparent: TRACEPARENT }))?.traceId).toBe(ROOT);
    expect(recordTrace(recordWith({ awsTraceHeader: 'garbage', traceparent: TRACEPARENT }))?.traceId).toBe(
      ROOT,
    );
  });

  it('gives undefined for a record without a trace or with garbage in both headers', () => {
    expect(recordTrace(sqsRecordFactory('{}'))).toBeUndefined();
    expect(recordTrace(recordWith({ awsTraceHeader: 'Root=evil;x', traceparent: 'zz' }))).toBeUndefined();
    expect(recordTrace({ ...sqsRecordFactory('{}'), messageAttributes: undefined } as never)).toBeUndefined();
  });
});
