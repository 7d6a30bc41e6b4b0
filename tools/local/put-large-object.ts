import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';

const PART_BYTES = 8 * 1024 * 1024;

/**
 * Uploads `body` to `bucket`/`key`: in one PutObject up to 8 MiB, in 8 MiB parts of a multipart upload above (fauxqs
 * takes at most 11 MiB per request; S3 5 GiB, with parts of 5 MiB or more but the last).
 *
 * @internal
 */
export async function putLargeObject(s3: S3Client, bucket: string, key: string, body: Buffer): Promise<void> {
  if (body.length <= PART_BYTES) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    return;
  }
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const parts: { ETag: string | undefined; PartNumber: number }[] = [];
  for (let at = 0; at < body.length; at += PART_BYTES) {
    const PartNumber = parts.length + 1;
    const { ETag } = await s3.send(
      new UploadPartCommand({
        Bucket: bucket,
        Key: key,
        UploadId,
        PartNumber,
        Body: body.subarray(at, at + PART_BYTES),
      }),
    );
    parts.push({ ETag, PartNumber });
  }
  await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: key,
      UploadId,
      MultipartUpload: { Parts: parts },
    }),
  );
}
