/** A small PDF whose page tree holds `pages` page objects (uncompressed, as most generators write it). */
export function pdfWithPages(pages: number): Buffer {
  const objects = Array.from(
    { length: pages },
    (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj`,
  );
  return Buffer.from(
    `%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count ${pages} >> endobj\n${objects.join('\n')}\n%%EOF\n`,
    'latin1',
  );
}
