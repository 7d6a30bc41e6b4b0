/**
 * The payload of a `PaymentCaptured` that a producer sends by reference because it is large: the payment with
 * `lines`, line items of about 110 bytes with five fields each (the `records` shape of the payload-memory bench, a
 * typical large payload: many small records), about `bytes` bytes of ASCII JSON (never more). The handler's schema
 * keeps only the payment's fields; the parse builds every line first, which is where the memory goes.
 *
 * @internal
 */
export function bigPaymentJson(paymentId: string, bytes: number): Buffer {
  const open = `{"paymentId":${JSON.stringify(paymentId)},"accountId":"acct-big","amount":1,"currency":"EUR","lines":[`;
  const close = ']}';
  const parts: string[] = [];
  let length = open.length + close.length - 1;
  for (let i = 0; ; i += 1) {
    const part = JSON.stringify({
      id: `line-${i}`,
      sku: `SKU-${(i * 7919) % 100_000}`,
      quantity: i % 7,
      amount: `${i % 1000}.25`,
      note: 'lorem ipsum dolor sit amet, consectetur adipiscing',
    });
    if (length + part.length + 1 > bytes) break;
    parts.push(part);
    length += part.length + 1;
  }
  return Buffer.from(`${open}${parts.join(',')}${close}`);
}
