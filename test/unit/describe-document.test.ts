import { describe, expect, it } from 'vitest';
import { describeDocument } from '../../lambda/domain/document-metadata-extraction-requested.ts';
import { pdfWithPages } from '../support/documents.ts';

describe('Function: describeDocument()', () => {
  it('detects a PDF by its first bytes and counts its page objects, not the page tree', () => {
    expect(describeDocument(pdfWithPages(3))).toEqual({
      contentType: 'application/pdf',
      pageCount: 3,
      lineCount: null,
    });
  });

  it.each([
    ['a last line with a newline', 'one\ntwo\n', 2],
    ['a last line without one', 'one\ntwo', 2],
    ['UTF-8 text', 'Grüße\nありがとう\n', 2],
    ['an empty file', '', 0],
  ])('counts the lines of text: %s', (_name, text, lines) => {
    expect(describeDocument(Buffer.from(text, 'utf8'))).toEqual({
      contentType: 'text/plain',
      pageCount: null,
      lineCount: lines,
    });
  });

  it('counts text whose sniffed head ends inside a multi-byte character as text', () => {
    const text = Buffer.from(`${'a'.repeat(8191)}é\n`, 'utf8');
    expect(describeDocument(text).contentType).toBe('text/plain');
  });

  it.each([
    ['NUL bytes', Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00])],
    ['invalid UTF-8', Buffer.from([0xff, 0xfe, 0x41])],
  ])('calls a file with %s binary', (_name, bytes) => {
    expect(describeDocument(bytes)).toEqual({
      contentType: 'application/octet-stream',
      pageCount: null,
      lineCount: null,
    });
  });
});
